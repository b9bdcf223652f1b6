"""The web side of deployed modules: the JavaScript runtime (``vta_runtime.mjs``, an ES
module), its Node command line (``vta_node.mjs``), the digits demo's static files
(``demo/``) and the local server that ``vta serve-demo`` runs (``demo_server.py``).
``package.json`` pins the npm tools of the tests and the bench (playwright-core,
onnxruntime-web); the runtime itself needs none.
"""

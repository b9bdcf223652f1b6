"""The compiler: graph IR, tensor expressions (`te`), loop IR (`tir`), code generation.

Kept free of imports so that `import compiler.tir` stays cheap; import the
subpackage you need.
"""

"""Auto-tuning: tasks, config spaces, search, a learned cost model, tuning logs.

The pieces, one concept per module:

* ``task.py``: a model's tuning tasks, one per distinct workload (the master op of a
  fused CPU group, or an accelerator conv2d), each with its config space;
  ``gpu_task.py`` the GPU groups'; ``extract.py`` finds them for any target;
* ``record.py``: the tuning log, JSON lines, one record per measured trial;
* ``loop_features.py`` / ``features.py`` / ``cost_model.py``: features of the lowered loop IR and the
  XGBoost model trained on them online;
* ``search.py``: the search strategies (a registry: ``random``, ``xgb``);
* ``transfer.py``: the cost model pre-trained on earlier logs (workloads rebuilt
  from their keys);
* ``scheduler.py``: which task the next trials go to;
* ``tuner.py``: the loop (propose, measure through a runner, log, learn);
* ``isa_class.py``: which records fit a CPU build: its exact target (triple, CPU, code
  features), else a sibling CPU of the same ISA class;
* ``apply.py``: the best record per workload for a build target (the tuning log
  and the logs shipped in ``compiler/autotune/logs/``).

Runners (what builds and measures a candidate: a local worker process, the cycle
model, a Dask cluster) live in ``driver/tune/`` and are handed to :func:`tune`; this
package never imports the driver.
"""
from .apply import TuningContext, load_tuning
from .record import FORMAT_VERSION, Record, TuningLog, target_record
from .extract import extract_tasks
from .task import Task
from .tuner import MeasureResult, tune

__all__ = ["FORMAT_VERSION", "MeasureResult", "Record", "Task", "TuningContext", "TuningLog",
           "extract_tasks", "load_tuning", "target_record", "tune"]

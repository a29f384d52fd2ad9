"""Moved: the runtime's metrics are `jobset.runtime.metrics`, the JobSet reconciler's are
`jobset.controllers.metrics`.

This re-export stays only until the last two importers (`runtime/events.py`,
`controllers/jobset_controller.py`) import from the new homes; `.importlinter` names the one
exception it needs. Import from the new modules.
"""

from jobset.controllers.metrics import JobSetMetrics, JobSetPhaseCollector
from jobset.runtime.metrics import RuntimeMetrics, new_registry

__all__ = ["JobSetMetrics", "JobSetPhaseCollector", "RuntimeMetrics", "new_registry"]

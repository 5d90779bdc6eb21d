"""`railonly validate` and compile's self-check: an OUTDIR's artifacts read back and
judged (SONiC ConfigDB against the YANG models, FRR via `vtysh -C`, EOS, the
cross-check against fabric.json, the plant files, MANIFEST.json).

Validators return plain-data problem lists; none raises on bad input.
May import: every room below it (input, platforms, design, graph, devices, cost,
outputs, outdir), railonly.fabric.parallel and .results, and railonly.proc
(frr_syntax alone: vtysh).
"""

from .frr_syntax import FrrProblem, check_frr_file, check_frr_files, check_frr_text, check_frr_texts
from .sonic_yang import Problem, load_models, validate_config_db, validate_config_db_file

__all__ = [
    "FrrProblem",
    "Problem",
    "check_frr_file",
    "check_frr_files",
    "check_frr_text",
    "check_frr_texts",
    "load_models",
    "validate_config_db",
    "validate_config_db_file",
]

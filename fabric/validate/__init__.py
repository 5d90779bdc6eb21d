"""Validators for generated artifacts: SONiC ConfigDB against the YANG models, FRR via vtysh.

Both return plain-data problem lists; neither raises on bad input.
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

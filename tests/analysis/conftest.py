"""Shared fixtures for the analysis tests: example designs and jobs from labs/."""

from __future__ import annotations

import pytest

from railonly.fabric.analysis import Cluster, load_job
from railonly.fabric.design.design import load_design

from ..conftest import REPO

LABS = REPO / "labs"
JOBS = LABS / "jobs"


def cluster_of(name: str) -> Cluster:
    return Cluster.from_design(load_design(str(LABS / f"{name}.yml")))


def job_of(path: str):
    return load_job(str(JOBS / path))


@pytest.fixture(scope="session")
def dgx_a100() -> Cluster:
    return cluster_of("dgx-a100")

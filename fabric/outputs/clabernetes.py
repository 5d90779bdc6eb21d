"""The clabernetes manifest `<name>.clabernetes.yaml`: the lab on Kubernetes.

clabernetes runs a containerlab topology across the machines of a Kubernetes
cluster (one launcher pod per node, links stitched with VXLAN), which is how
a lab grows past one host. Its `Topology` resource
(``clabernetes.containerlab.dev/v1alpha1``) carries the containerlab file as
text, so this module derives everything from the `<name>.clab.yml` the
compiler already produced (the lab's topology: the whole design or its
slice) and the files that topology references:

* one ``ConfigMap`` per switch, ``<lab>-<switch>-files``, holding that
  switch's startup files (``config_db.json`` and ``frr.conf`` for SONiC,
  ``startup-config`` for EOS), keyed by file name;
* the ``Topology``, whose ``spec.deployment.filesFromConfigMap`` mounts each
  key at the path the containerlab file names (``configs/<switch>/...`` or
  ``lab/configs/<switch>/...``, relative to the topology file, as the
  launcher resolves it), so the definition is byte for byte the clab file.

The manifest is a multi-document YAML file for ``kubectl apply -f``:
ConfigMaps first, the Topology last. GPU and HB nodes carry no files: their
``exec`` lines travel inside the definition.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import yaml

from ..outdir_layout import clab_yml, clabernetes_yaml
from .clab import NODE_STARTUP_CONFIG

# libyaml's safe loader where installed (the same data, ~10x faster: validate parses a 32k-GPU
# lab's .clab.yml here after the trust check has parsed it with libyaml too)
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

API_VERSION = "clabernetes.containerlab.dev/v1alpha1"
MANAGED_BY = {"app.kubernetes.io/managed-by": "railonly"}
# Kubernetes stores an object in etcd whole; a ConfigMap must stay under 1 MiB.
CONFIGMAP_MAX_BYTES = 1024 * 1024 - 4096  # room for metadata
# etcd's default request limit: a larger Topology is refused unless the cluster raises it.
OBJECT_MAX_BYTES = 1536 * 1024
# Names become Kubernetes object names (DNS-1123 subdomains) and data keys.
_OBJECT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_DATA_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


class TooLarge(ValueError):
    """A switch's files do not fit one ConfigMap: the lab cannot run on clabernetes as one."""


def filename(lab: str) -> str:
    return clabernetes_yaml(lab)


def configmap_name(lab: str, node: str) -> str:
    return f"{lab}-{node}-files"


def _node_files(node: dict) -> list[str]:
    """Files a containerlab node reads from beside the topology file (relative paths)."""
    paths = []
    if node.get(NODE_STARTUP_CONFIG):
        paths.append(node[NODE_STARTUP_CONFIG])
    for bind in node.get("binds") or []:
        paths.append(bind.split(":", 1)[0])
    return paths


def manifests(clab_text: str, files: Mapping[str, bytes | str]) -> list[dict]:
    """ConfigMaps and the Topology for the lab in `clab_text`, as plain dicts.

    `files` is the OUTDIR being compiled ({relative path: bytes}); every file a
    node references must be in it (a compiler bug otherwise: AssertionError).
    """
    topo = yaml.load(clab_text, Loader=SAFE_LOADER)
    lab = topo["name"]
    nodes = topo["topology"]["nodes"]
    docs: list[dict] = []
    mounts: dict[str, list[dict]] = {}
    for node in sorted(nodes):
        paths = _node_files(nodes[node])
        if not paths:
            continue
        name = configmap_name(lab, node)
        data: dict[str, str] = {}
        for path in paths:
            key = path.rsplit("/", 1)[-1]
            if path not in files or key in data or not _DATA_KEY.fullmatch(key):
                raise AssertionError(f"clabernetes: node {node} references {path!r}, which cannot become key {key!r}")
            text = files[path]
            data[key] = text.decode() if isinstance(text, bytes) else text
        mounts[node] = [{"configMapName": name, "configMapPath": k, "filePath": p, "mode": "read"}
                        for k, p in zip(data, paths)]
        size = sum(len(k) + len(v.encode()) for k, v in data.items())
        if not _OBJECT_NAME.fullmatch(name):
            raise AssertionError(f"clabernetes: {name!r} is not a Kubernetes object name")
        if size > CONFIGMAP_MAX_BYTES:  # a radix-1024 switch's config_db.json alone is ~1.4 MB
            raise TooLarge(f"ConfigMap {name!r} would hold {size:,} bytes, above Kubernetes' 1 MiB object limit")
        docs.append({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": name, "labels": {**MANAGED_BY, "railonly.lab": lab}},
                     "data": data})
    docs.append({
        "apiVersion": API_VERSION,
        "kind": "Topology",
        "metadata": {"name": lab, "labels": {**MANAGED_BY, "railonly.lab": lab}},
        "spec": {
            # Resources are <lab>-<node>, so two labs can share a namespace.
            "naming": "prefixed",
            "connectivity": "vxlan",
            # One ClusterIP service per node: reachable in the cluster (push, ssh)
            # without a LoadBalancer address per GPU.
            "expose": {"exposeType": "ClusterIP"},
            "definition": {"containerlab": clab_text},
            "deployment": {"filesFromConfigMap": mounts},
        },
    })
    return docs


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):
    pass


def _str(dumper, text: str):
    # Multi-line text (the definition, configs) as a literal block: readable, diffable.
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if "\n" in text else None)


_Dumper.add_representer(str, _str)


def render(clab_text: str, files: Mapping[str, bytes | str]) -> str:
    docs = manifests(clab_text, files)
    text = yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1000,
                         explicit_start=True)
    Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    if list(yaml.load_all(text, Loader=Loader)) != docs:  # parse back before writing
        raise AssertionError("clabernetes manifest does not survive a YAML round trip")
    return text


def too_large(lab: str, files: Mapping[str, bytes | str]) -> str | None:
    """A note when the lab's Topology is larger than etcd's default request limit
    (it holds the whole containerlab file) or was not written (a switch's files exceed
    one ConfigMap), else None."""
    if filename(lab) not in files:
        return (f"{filename(lab)} not written: a switch's startup files exceed one Kubernetes ConfigMap (1 MiB);"
                " compile a smaller lab (--lab-domains N) or fewer ports per switch to run it on clabernetes")
    size = len(files[clab_yml(lab)])
    if size <= OBJECT_MAX_BYTES - 64 * 1024:  # room for the rest of the Topology
        return None
    return (f"{filename(lab)}: the Topology holds a {size / 1e6:,.1f} MB containerlab file, above Kubernetes'"
            f" default {OBJECT_MAX_BYTES / 1048576:g} MiB object limit; compile a smaller lab (--lab-domains N)"
            " to run it on clabernetes")


def produce(lab: str, files: Mapping[str, bytes | str]) -> dict[str, str]:
    """The producer: reads `<lab>.clab.yml` and its switch files from the compiled `files`.
    Nothing when a switch's files exceed one ConfigMap (:func:`too_large` says so)."""
    clab_text = files[clab_yml(lab)]
    if isinstance(clab_text, bytes):
        clab_text = clab_text.decode()
    try:
        return {filename(lab): render(clab_text, files)}
    except TooLarge:
        return {}

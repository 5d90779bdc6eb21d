"""`railonly validate` and compile's self-check: read artifacts back, judge them.

Sources are anything that maps a relative path to text: an OUTDIR on disk
(`validate`) or the files compile is about to write. Every SONiC ConfigDB
document goes through the YANG models, every frr.conf through `vtysh -C`,
every config through its vendor's one parser (:mod:`railonly.fabric.devices.readback`), then the cross-check.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable

from ..outdir_layout import CONFIG_DB, CONFIGS, FRR_CONF, STARTUP_CONFIG, switch_file
from ..graph import fabric_json
from ..graph.model import Fabric, Node
from ..input import jsonsource
from ..input.problems import InputError, Problem

from ..outdir import reader as outdir_reader
from ..outdir.host_forms import check_hosts
from . import lab_schemas
from .crosscheck import Merge, Plan, judge_switch
from ..devices.readback.eos import parse_startup_config
from ..devices.readback.facts import DeviceFacts
from ..devices.readback.sonic import parse_config_db
from .manifest import check_manifest
from .plant import plant
from .validate_report import Result
from ..progress import Progress, Silent

Reader = Callable[[str], "str | None"]


# From this many switches the per-switch pass forks its workers.
POOL_MIN_SWITCHES = 128
# From this many switches the whole-tree checks run in a forked process beside the per-switch pool.
BESIDE_MIN_SWITCHES = 128
# Per-switch shards per worker: progress moves in steps of 1/(jobs x this), and a worker that
# finishes early (the whole-tree checks share the cores) takes the next shard. 16 at 32k GPUs:
# 80 switches (~0.12 s) a shard on two workers, so they end closer together than with 8
# (faster in eight alternated pairs out of eight, by 0.03-0.85 s, median 0.15 s); 32 was no faster.
SHARDS_PER_JOB = 16
# frr.conf files checked per vtysh run, beside the pool as the shards arrive: a run costs
# ~34 ms of CPU to start, and with the memo (frr_memo) a file asks ~18 lines at 32k GPUs.
FRR_FILES_PER_RUN = 512
VTYSH_AT_ONCE = 2  # one run's questions are written while another's answers are read
SPLIT_MIN_FILES = 64  # the pool's last frr.conf files are split over the runs from this many


class OutdirError(Exception):
    """OUTDIR is not a compiled fabric (exit 2)."""


def disk_reader(outdir: str) -> Reader:
    """Reads below OUTDIR as untrusted input: no symlink followed, sizes
    bounded, UntrustedFile (exit 2) for anything else (see :mod:`railonly.fabric.outdir.reader`)."""
    return outdir_reader.OutdirReader(outdir).read_text


def memory_reader(files: dict[str, bytes]) -> Reader:
    def read(path: str) -> str | None:
        data = files.get(path)
        return None if data is None else data.decode()
    return read


def _no_fabric(where: str) -> None:
    raise OutdirError(f"{where}: no {fabric_json.FILE} (is this the OUTDIR of 'railonly compile'?)")


def load_fabric(read: Reader, where: str) -> Fabric:
    """The fabric graph of OUTDIR's fabric.json (graph/fabric_json.py parses it: InputError names each field)."""
    text = read(fabric_json.FILE)
    if text is None:
        _no_fabric(where)
    fab = fabric_json.parse(text, os.path.join(where, fabric_json.FILE))
    if fab.design.schema_version != fabric_json.SCHEMA_VERSION:
        raise OutdirError(f"{where}/{fabric_json.FILE} is not a schema_version {fabric_json.SCHEMA_VERSION} fabric "
                          f"(it says {str(fab.design.schema_version)[:20]!r})")
    return fab


def validate(read: Reader, fabric: Fabric, yang_for: Callable[[Node], bool] = lambda n: True,
             frr: bool = True, plant_check: bool = True, checked: "set[str] | None" = None,
             progress: Progress | None = None, trust_in: str | None = None) -> list[Result]:
    """All results; `yang_for(node)` picks which switches get the YANG (and vtysh) pass;
    `plant_check=False` leaves the plant files to the caller (validate_outdir runs them beside);
    `checked`: judge only these switches (an incremental compile's self-check); `trust_in`
    (OUTDIR as given): the allow-list checks of every switch file too, on the text read once
    for all checks (`trust/...` results; a malformed config_db.json raises UntrustedFile)."""
    from .. import parallel

    from .frr_memo import FrrMemo, check_texts

    switches = [n for n in fabric.switches if checked is None or n.name in checked]
    picked = [yang_for(n) for n in switches]  # decided up front: yang_for may keep state
    if any(y and n.platform != "eos" for n, y in zip(switches, picked)):
        from . import sonic_yang

        sonic_yang.require()  # exit 3 naming the missing binding, before any result
        if len(switches) >= POOL_MIN_SWITCHES and parallel.jobs() > 1:
            # loaded once here, the workers inherit them (each loaded its own: ~0.6 s of CPU)
            try:
                sonic_yang.load_models()
            except Exception:  # noqa: BLE001 - each switch's YANG result names it, as without this
                pass
    if frr and any(y and n.platform != "eos" for n, y in zip(switches, picked)):
        from .frr_syntax import require_vtysh

        require_vtysh()  # ToolMissing, exit 3: a missing FRR is no failing config
    plan = Plan(fabric, checked)  # before the fork: the workers judge their switches with it
    merge = Merge(plan)
    results: list[Result] = []
    trust: list[Problem] = []
    frr_owner: dict[str, str] = {}
    frr_checks: list = []  # futures of vtysh runs, in shard order
    frr_waiting: list[tuple[str, str]] = []  # (path, text) not yet sent
    memo = FrrMemo()  # vtysh's answers, shared by the shards' runs: most lines are asked once
    progress = progress or Silent()
    label = f"checking {len(switches):,} switches (SONiC YANG, readback)"
    progress.step(label, 0, len(switches))

    # Reading back is per switch and independent: fan it out (workers inherit `read`), in
    # shards finer than the workers so the count moves and no worker idles at the end. The
    # shards' frr.conf files go to vtysh as they arrive, beside the rest of the pool.
    with ThreadPoolExecutor(max_workers=VTYSH_AT_ONCE) as vtysh:
        def arrived(part, done: int, shards: int) -> None:
            p_verdicts, p_results, p_frr, p_trust = part
            trust.extend(p_trust)
            for verdict in p_verdicts:
                merge.add(verdict)
            results.extend(p_results)
            for path, (name, _text) in p_frr.items():
                frr_owner[path] = name
            if frr:
                frr_waiting.extend((p, t) for p, (_n, t) in p_frr.items())
                # What vtysh has left when the pool is done is wall time after it (the last
                # run of 512+ files took ~0.5 s there): the last shards' files go as they
                # arrive, the very last ones split over both runs. Each file's verdict is
                # its own whichever run asks (the results are grouped by file below).
                last = shards - done < parallel.jobs()
                if frr_waiting and (len(frr_waiting) >= FRR_FILES_PER_RUN or last):
                    runs = VTYSH_AT_ONCE if done == shards and len(frr_waiting) >= SPLIT_MIN_FILES else 1
                    for k in range(runs):
                        if frr_waiting[k::runs]:
                            frr_checks.append(vtysh.submit(check_texts, frr_waiting[k::runs], memo))
                    frr_waiting.clear()
            progress.step(label, len(switches) * done // shards, len(switches))

        # one RepeatedMembers for the run: a worker keeps its copy across its shards (the QoS
        # tables decoded once a worker, not once a shard: 450 decodes fewer at 32k GPUs)
        state = (read, plan, switches, picked, trust_in, outdir_reader.RepeatedMembers())
        parallel.map_shards(_read_shard, state, len(switches), min_items=POOL_MIN_SWITCHES,
                            shards_per_job=SHARDS_PER_JOB, arrived=arrived)
        if frr_checks:
            progress.step(f"checking {len(frr_owner):,} FRR configs (vtysh -C)")
        frr_problems = [p for f in frr_checks for p in f.result()]
    if frr_checks:
        by_file: dict[str, list[str]] = {p: [] for p in frr_owner}
        for p in frr_problems:
            probs = by_file.setdefault(p.file, [])
            if p.file != "<all>" or str(p) not in probs:  # vtysh missing: said once, not per run
                probs.append(str(p))
        for path, probs in sorted(by_file.items()):
            name = frr_owner.get(path, path)
            results.append(Result(f"frr/{name}", "frr", not probs, "\n".join(probs) or "vtysh -C accepts it"))
    order = {n.name: i for i, n in enumerate(switches)}
    results.sort(key=lambda r: order.get(r.id.split("/", 1)[1], -1))  # shard order -> fabric order
    if trust_in is not None:
        results = trust_results(trust, trust_in) + results
    return results + merge.results() + (plant(fabric, read) if plant_check else [])


def _read_shard(state, i: int, n: int):
    """Cross-check verdicts, YANG results, FRR texts and allow-list findings of switches i, i+n, ...
    (runs in a worker; the facts stay here: the verdicts are what the merge needs of them)."""
    from . import sonic_yang

    read, plan, switches, picked, trust_in, repeated = state  # repeated: the QoS tables every switch of a shape repeats
    facts: dict[str, DeviceFacts] = {}
    results: list[Result] = []
    frr: dict[str, tuple[str, str]] = {}
    trust: list[Problem] = []
    for sw, yang in zip(switches[i::n], picked[i::n]):
        name = sw.name
        path, frr_path, eos_path = (switch_file(name, f) for f in (CONFIG_DB, FRR_CONF, STARTUP_CONFIG))
        # the trust pass reads every file check_outdir would (a stray config_db.json of an EOS
        # switch included); otherwise only what the platform uses
        sonic = sw.platform != "eos"
        text = read(path) if sonic or trust_in is not None else None
        frr_text = read(frr_path) if sonic or trust_in is not None else None
        eos_text = read(eos_path) if not sonic or trust_in is not None else None
        doc = tables = None
        if trust_in is not None and outdir_reader.NODE_NAME.fullmatch(name):
            found, doc, tables = outdir_reader.check_switch_texts(os.path.join(trust_in, os.path.dirname(path)),
                                                                  text, frr_text, eos_text, repeated=repeated)
            trust += found
        if not sonic:
            if eos_text is not None:
                facts[name] = parse_startup_config(eos_text, eos_path, name).facts
            continue
        if text is None:
            continue
        if doc is None:
            try:
                doc = jsonsource.loads(text)
            except ValueError as exc:
                results.append(Result(f"yang/{name}", "yang", False, f"{path}: not JSON: {exc}"))
                facts[name] = DeviceFacts(name, "sonic", path, problems=[f"not JSON: {exc}"])
                continue
        facts[name] = parse_config_db(doc, frr_text, path, frr_path if frr_text is not None else None, name).facts
        if yang:
            probs = sonic_yang.validate_config_db(doc, texts=tables)
            results.append(Result(f"yang/{name}", "yang", not probs,
                                  "\n".join(f"{path}: {p}" for p in probs) or "passes the SONiC YANG models"))
            if frr_text is not None:
                frr[frr_path] = (name, frr_text)
    verdicts = [judge_switch(plan, sw, facts[sw.name]) for sw in switches[i::n] if sw.name in facts]
    return verdicts, results, frr, trust


def validate_outdir(outdir: str, manifest: bool = True, progress: Progress | None = None) -> list[Result]:
    """Every result for an OUTDIR on disk. Symlinks, special files and malformed
    JSON/YAML raise InputError (exit 2); what the compiler never emits (exec
    lines, FRR/EOS commands, odd names) fails a `trust/<file>` result.
    `manifest=False` skips the byte-for-byte checks (the MANIFEST.json hashes and the
    clabernetes manifest rendered again): for configs taken back from devices, which
    print the same intent in other bytes."""
    from .. import parallel

    # fabric.json and every config decoded are millions of acyclic objects: the cyclic
    # collector would only rescan them (it tripled fabric.json's parse at 32k GPUs), and
    # in the forked workers its bookkeeping copies the inherited pages
    with parallel.no_cyclic_gc():
        return _validate_outdir(outdir, manifest, progress)


def _validate_outdir(outdir: str, manifest: bool, progress: Progress | None) -> list[Result]:
    refused = outdir_reader.outdir_problem(outdir)  # empty, absent or a file: said as diff and push say it
    if refused is not None:
        raise refused
    if not os.path.lexists(os.path.join(outdir, fabric_json.FILE)):
        _no_fabric(outdir)  # before the walk: `validate /` would walk the whole file system
    # the one walk of the tree: its safety scan lists the files MANIFEST.json, the inert
    # check and check_outdir need (each walked it again: 0.1-0.3 s of CPU a walk at 32k GPUs)
    files: dict[str, str] = {}
    folders: set[str] = set()
    unsafe = outdir_reader.unsafe_entries(outdir, files=files, folders=folders)
    if unsafe:
        raise InputError(unsafe)
    read = disk_reader(outdir)
    from .. import parallel

    # MANIFEST.json's hashes need no fabric.json: on a big OUTDIR a forked process checks
    # them while this one parses fabric.json and loads the YANG models (one core idle else)
    early = None
    if manifest and parallel.jobs() > 1 and _switch_dirs(outdir) >= BESIDE_MIN_SWITCHES:
        early = parallel.Background(check_manifest, outdir, files, folders)
    try:
        fabric = load_fabric(read, outdir)
        # The whole-tree checks share nothing with the per-switch pass: on a big OUTDIR they run
        # in a forked process beside it (both cores busy), on a small one in line.
        small = len(fabric.switches) < BESIDE_MIN_SWITCHES or parallel.jobs() <= 1
        side = None if small else parallel.Background(_beside, outdir, fabric, manifest,
                                                            manifest and early is None, files, folders)
        try:
            per_switch = validate(read, fabric, plant_check=side is None, progress=progress, trust_in=outdir)
        except BaseException:
            if side is not None:
                side.result()  # its error (unsafe tree, malformed file) is the one to report first
            raise
        if side is not None:
            (progress or Silent()).step("checking the whole tree (trust, MANIFEST, lab schemas, plant)")
        if side is None:
            trust, inert, clabernetes, schemas, manifest_results = _whole_tree_checks(
                outdir, fabric, manifest, manifest and early is None, files, folders)
            plants: list[Result] = []  # already in per_switch
        else:
            trust, inert, clabernetes, schemas, manifest_results, plants = side.result()
        if early is not None:
            manifest_results = early.result()
    finally:
        if early is not None:
            early.cancel()  # on any way out before its result (a no-op after it): no child left behind
    # one trust list in file order: the whole-tree findings and the switch files' (from the pass)
    switch_trust = [r for r in per_switch if r.check == "trust"]
    per_switch = [r for r in per_switch if r.check != "trust"]
    trust = sorted(trust + switch_trust, key=lambda r: r.id)
    return trust + inert + clabernetes + per_switch + plants + schemas + manifest_results


def _switch_dirs(outdir: str) -> int:
    """How many entries configs/ holds: the size of the design before fabric.json is parsed."""
    try:
        return len(os.listdir(os.path.join(outdir, CONFIGS)))
    except OSError:
        return 0


def _beside(outdir: str, fabric: Fabric, manifest: bool, hashes: bool, files: dict[str, str],
            folders: set[str]) -> tuple[list[Result], ...]:
    """The whole-tree checks and the plant files (run in the forked process)."""
    return _whole_tree_checks(outdir, fabric, manifest, hashes, files, folders) + (plant(fabric, disk_reader(outdir)),)


def _whole_tree_checks(outdir: str, fabric: Fabric, manifest: bool, hashes: bool, files: dict[str, str],
                       folders: set[str]) -> tuple[list[Result], ...]:
    """(trust, inert, clabernetes, lab schemas, MANIFEST) results of an OUTDIR on disk
    (`hashes=False`: MANIFEST.json is checked elsewhere, its results here are []); `files`:
    the regular files of the tree as its safety scan listed them (which found nothing else),
    `folders` its folders."""
    read = disk_reader(outdir)
    # the design's own switch files are judged in the per-switch pass, from the text it reads
    trust = trust_results(outdir_reader.check_outdir(outdir, require_lab=False, fabric=fabric, switch_files=False,
                                                     scanned=True)
                          + check_hosts(outdir_reader.OutdirReader(outdir), files), outdir)
    from .rendered import check_clabernetes, check_inert

    # The lab files against their published schemas: here, not in compile's self-check,
    # since on a 32k-GPU design parsing 40 MB of YAML is ~10% of the compile.
    schemas = lab_schemas.check(fabric, read)
    # the clabernetes manifest and MANIFEST.json are byte-for-byte checks against what compile
    # wrote: --no-manifest (configs taken back from devices, other bytes) skips both
    return (trust, check_inert(outdir, files), check_clabernetes(outdir) if manifest else [], schemas,
            check_manifest(outdir, files, folders) if hashes else [])


def trust_results(problems: list[Problem], outdir: str) -> list[Result]:
    """One failed `trust/<file>` result per file with allow-list findings, in file order."""
    by_file: dict[str, list[str]] = {}
    for p in problems:
        where = f"line {p.line}: " if p.line else ""
        key = f" {p.path}:" if p.path else ""
        by_file.setdefault(p.file or outdir, []).append(f"{where}{key} {p.message}".replace(":  ", ": ").strip())
    return [Result(f"trust/{os.path.relpath(f, outdir)}", "trust", False,
                   "\n".join(f"{os.path.relpath(f, outdir)}: {m}" for m in msgs))
            for f, msgs in sorted(by_file.items())]


def shape(n: Node) -> tuple:
    """What makes two switches' configs alike: the same code renders the same shape of config
    for the same platform, tier, count of rails served and whether it speaks BGP."""
    return (n.platform, n.tier, len(n.rails), bool(n.asn))


def sample_per_shape(covered: Iterable[Node] = ()) -> Callable[[Node], bool]:
    """Picks the first switch of each shape it is asked about, none of a shape a switch in
    `covered` has (one judged already)."""
    seen = {shape(n) for n in covered}

    def pick(n: Node) -> bool:
        key = shape(n)
        if key in seen:
            return False
        seen.add(key)
        return True
    return pick

"""``engine migrate-assevra CONFIG --out DIR``: an Assevra 0.6 config as a release-gate spec.

The new folder is a copy of the shipped release-gate spec (``--from``) whose Policy and
Evaluation carry the team's own settings, plus ``MIGRATION.md``, which lists every config
key: carried over, replacing a shipped setting, without a specgate equivalent, or unknown.
The folder is written beside its destination, validated like any spec, then renamed into
place, so a failed migration leaves nothing behind; a non-empty destination is refused.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any

import yaml

from engine import folders as walk
from engine.errors import Problem, SpecErrors, UsageError
from engine.protocols.release_gate import assevra_config as config
from engine.protocols.release_gate.assevra_judge import judge
from engine.spec import yaml as spec_yaml

HEADER = ("# Migrated from the Assevra 0.6 config {name} by `engine migrate-assevra`:\n"
          "# the shipped agent-release-gate {kind} with the team's settings applied.\n"
          "# MIGRATION.md lists every setting carried over and every one that was not.\n")


def arguments(parser: argparse.ArgumentParser) -> None:
    """``--out`` (required) and ``--from``."""
    parser.add_argument("--out", type=Path, required=True,
                        help="new spec folder to write (must not exist or be empty)")
    parser.add_argument("--from", dest="source", type=Path,
                        default=Path("specs/agent-release-gate"),
                        help="the release-gate spec to start from "
                             "(default: specs/agent-release-gate)")
    parser.add_argument("--trusted-key", dest="baseline_keys", action="append", default=[],
                        type=Path, metavar="PUB",
                        help="a public key baselines must be signed by: copied into the "
                             "spec (keys/) and listed under history.trusted_keys "
                             "(repeatable; a release trusts no other)")


def run(args: argparse.Namespace, evaluations: list[Any]) -> tuple[int, list[str]]:
    """Convert the one config named by the paths into a spec folder at ``--out``."""
    if len(args.paths) != 1 or not args.paths[0].is_file():
        raise UsageError("name exactly one Assevra config file", "MIGRATION_ONE_CONFIG")
    source, out, path = args.source, args.out, args.paths[0]
    if not (source / "policy.yaml").is_file() or not (source / "evaluation.yaml").is_file():
        raise UsageError(f"{source} is not a release-gate spec folder (policy.yaml and "
                         "evaluation.yaml); name one with --from", "MIGRATION_SOURCE_MISSING")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"{out} is not empty; migrate-assevra never overwrites",
                         "OUTPUT_EXISTS")
    policy = yaml.safe_load((source / "policy.yaml").read_text("utf-8"))
    evaluation = yaml.safe_load((source / "evaluation.yaml").read_text("utf-8"))
    m = convert(read(path), policy["spec"], evaluation["spec"])
    if m.problems:
        raise SpecErrors(m.problems)
    policy["metadata"]["description"] = f"Migrated from the Assevra 0.6 config {path.name}."
    keys = _baseline_keys(args.baseline_keys, evaluation["spec"])
    _write(source, out, {"policy.yaml": _yaml(policy, path.name, "Policy"),
                         "evaluation.yaml": _yaml(evaluation, path.name, "Evaluation"),
                         "MIGRATION.md": report(m, path), **keys})
    return 0, [f"wrote {out}: {len(m.carried)} setting(s) carried over, {len(m.replaced)} "
               f"shipped setting(s) replaced, {len(m.dropped)} without a specgate "
               f"equivalent, {len(m.unknown)} unknown key(s); see {out / 'MIGRATION.md'}",
               f"try: engine validate {out} && engine run {out} --out OUT"]


def _baseline_keys(paths: list[Path], evaluation: dict[str, Any]) -> dict[str, str]:
    """``--trusted-key``: each public key (checked to be one) as ``keys/baseline-N.pub.pem``,
    listed under the Evaluation's ``history.trusted_keys`` after any it had."""
    from engine.evidence import signing
    files = {}
    listed = evaluation.setdefault("history", {}).setdefault("trusted_keys", [])
    for i, path in enumerate(paths, 1):
        key = signing.load_public(path)  # BAD_KEY, named, when it is not one
        name = f"keys/baseline-{i}.pub.pem"
        files[name] = signing.public_pem(key).decode()
        listed.append(name)
    if not listed:
        evaluation["history"].pop("trusted_keys")
    if not evaluation["history"]:
        evaluation.pop("history")
    return files


def read(path: Path) -> spec_yaml.Document:
    """The config, YAML or JSON, with every value's place; problems are located errors."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecErrors([Problem(str(path), 1, 1, "BAD_ENCODING", "",
                                  f"not UTF-8 (byte {exc.start})")]) from None
    doc, problems = spec_yaml.parse(text, str(path))
    if doc is None:
        raise SpecErrors(problems)
    return doc


def convert(doc: spec_yaml.Document, policy: dict[str, Any],
            evaluation: dict[str, Any]) -> config.Migration:
    """Apply the config in ``doc`` to the Policy and Evaluation specs (edited in place)."""
    m = config.Migration(doc, policy, evaluation)
    if not isinstance(doc.data, dict):
        m.bad((), "ASSEVRA_CONFIG_NOT_MAPPING", "an Assevra config is a mapping of settings")
        return m
    version = doc.data.get("version")
    if version is not None and (type(version) is not int or version != 1):
        m.bad(("version",), "ASSEVRA_CONFIG_VALUE",
              f"config version {json.dumps(version)} is not Assevra 0.6's (1)")
    shipped = config.assevra_defaults(m)
    config.walk(m, (), doc.data, {("thresholds",): config.thresholds,
                                  ("gate", "required_dimensions"): config.required,
                                  ("gate", "purpose"): config.purpose, ("judge",): judge})
    config.record_replaced(m, shipped)
    _attainable(m)
    return m


def _attainable(m: config.Migration) -> None:
    """A Wilson gate never reaches a threshold of 1 (agent-release-gate §7.4): say so at
    the config's gate_on, naming the dimensions, rather than in the converted policy."""
    if m.policy["gate"].get("gate_on") != "wilson_lower":
        return
    at_one = [n for n, c in m.policy["categories"].items() if c.get("threshold", 0) >= 1]
    if at_one:
        m.bad(("gate", "gate_on"), "UNATTAINABLE_GATE",
              "the Wilson lower bound never reaches a threshold of 1.0 ("
              + ", ".join(at_one) + ")", "lower their thresholds or gate on point")


def _yaml(data: dict[str, Any], name: str, kind: str) -> str:
    body = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    return HEADER.format(name=name, kind=kind) + body


def _write(source: Path, out: Path, files: dict[str, str]) -> None:
    """Copy ``source`` beside ``out``, write ``files`` into it, validate it, move it in."""
    from engine.spec.evaluation import load

    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        folder = staging / out.name
        # walked without recursion: a tree too deep in --from is PATH_TOO_DEEP (exit 2)
        walk.copy(source, folder, leave_out=frozenset({"MIGRATION.md"}))
        for name, text in files.items():
            (folder / name).parent.mkdir(exist_ok=True)
            (folder / name).write_text(text, "utf-8")
        try:
            load([folder])
        except SpecErrors as exc:
            raise UsageError("the converted spec does not validate (a bug in "
                             f"migrate-assevra): {exc.problems[0]}",
                             "MIGRATED_SPEC_INVALID") from None
        if out.exists():
            out.rmdir()  # empty, checked above
        folder.rename(out)
    finally:
        walk.remove(staging)  # what was copied is within the walk's limits


def _cell(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
    return "`" + " ".join(text.split()).replace("|", "\\|").replace("`", "'") + "`"


def report(m: config.Migration, path: Path) -> str:
    """MIGRATION.md: what became of every setting of the config."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    lines = [f"# Migrated from Assevra 0.6: {path.name}", "",
             f"Config sha256 `{digest}`. This folder is the shipped agent-release-gate spec "
             "with the settings below applied; `engine validate` checks it.", ""]
    sections: list[tuple[str, tuple[str, ...], list[Any]]] = [
        ("Carried over", ("Assevra key", "value", "specgate setting"), m.carried),
        ("Shipped settings replaced by Assevra's defaults", ("setting", "shipped", "now"),
         m.replaced),
        ("Not carried over: no specgate equivalent", ("Assevra key", "value", "instead"),
         m.dropped),
        ("Unknown keys (Assevra 0.6 does not know them either)", ("key", "value"), m.unknown)]
    for title, head, rows in sections:
        lines += [f"## {title}", ""]
        if not rows:
            lines += ["None.", ""]
            continue
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
        lines.append("")
    return "\n".join(lines + NEXT_STEPS)


NEXT_STEPS = [
    "## Next steps", "",
    "- Run your dataset: `engine run DIR --input runs=DATASET --out OUT`. The Evaluation",
    "  still pins the shipped dataset's suite, so another dataset is INCOMPLETE",
    "  (`SUITE_MISMATCH`) until you review it and put the `suite_sha256` from its",
    "  scorecard into `evaluation.yaml`.",
    "- Assevra scorecards and history cannot be signed baselines. Sign a specgate run",
    "  (`--key`); its `scorecard.json` is the first baseline (`history.baseline` in",
    "  `evaluation.yaml`, or `--baseline` with `--trusted-key`).",
    "- Mark the dimensions your release must cover (`required: true`) and the fewest cases",
    "  each needs (`min_cases`); Assevra had no such scope.", ""]

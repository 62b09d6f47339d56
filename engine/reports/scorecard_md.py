"""scorecard.md: everything scorecard.html shows, as Markdown for a CI step summary.

Every text that comes from the records is written through ``md`` (or ``code`` inside a code
span), so no record can add a link, an image, HTML or a table column."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.reports.text import (
    CORRECTED_NOTE,
    FLAKY_NOTE,
    GENERATED_AT,
    RERUN_NOTE,
    SCORECARD_DIGEST,
    code,
    corrected,
    expected_observed,
    flaky_named,
    fmt,
    gated_on,
    md,
    needs_no_fix_text,
    no_fix,
    not_included,
    titled,
    what_failed,
)

Card = dict[str, Any]
FINDINGS_SHOWN = 20
_STATUSES = ("FAIL", "ERROR", "ABSTAIN")  # a finding's evidence when its rows said nothing


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    """A Markdown table; cells are already escaped."""
    return [f"| {' | '.join(header)} |", "|" + "---|" * len(header),
            *(f"| {' | '.join(str(c) for c in row)} |" for row in rows)]


def head(card: Card) -> list[str]:
    decision = card["decision"]
    note = " (not a release decision)" if decision in ("TRIAGE", "SELF_TEST") else ""
    e, p = card["evaluation"], card["policy"]
    s = card["suite"]
    return [f"## {md(titled('evaluation', e['name'], e.get('version')))} · "
            f"{md(titled('policy', p['name'], p['version']))}: **{decision}**{note}", "",
            f"Policy `{code(p['name'])}` version `{code(p['version'])}` (scoring "
            f"`{code(p.get('scoring_version'))}`), suite `{code(s['name'])}` version "
            f"`{code(s['version'])}`, purpose {card['purpose']}, policy_sha256 "
            f"`{card['policy_sha256']}`.", "", *required(card), "", versions(card)]


def required(card: Card) -> list[str]:
    """The categories the policy requires, and those of them without evidence."""
    def names(listed: list[str]) -> str:
        return ", ".join(md(n) for n in listed) or "none"
    return [f"Required categories: {names(card['required_categories'])}. Missing: "
            f"{names(card['missing_categories'])}."]


def versions(card: Card) -> str:
    return (f"Versions: engine {md(card['engine']['name'])} `{code(card['engine']['version'])}`"
            f", scorecard format `{code(card['scorecard_version'])}`, scoring "
            f"`{code(card['policy'].get('scoring_version'))}`.")


def categories(card: Card) -> list[str]:
    fixed = any(c.get("corrected") for c in card["categories"].values())
    abstained = any(c.get("abstained") for c in card["categories"].values())
    rows = [[md(name), c["state"], c["n"], c["passed"], c.get("waived", 0),
             *([c["abstained"]] if abstained else []), fmt(c["rate"]),
             f"[{fmt(c['wilson_lower'])}, {fmt(c['wilson_upper'])}]",
             *([corrected(c)] if fixed else []), fmt(c["threshold"]),
             fmt(c.get("minimum")), gated_on(c)] for name, c in card["categories"].items()]
    lines = _table(["category", "state", "n", "passed", "waived",
                    *(["abstained"] if abstained else []), "rate", "Wilson 95%",
                    *(["corrected [interval]"] if fixed else []),
                    "threshold", "minimum", "gated on"], rows)
    lines += ["", "A threshold or a minimum is met when the value the category is gated on "
              "(the point estimate passed/n, or the Wilson 95% lower bound) reaches it. "
              "`waived`: FAIL rows an active waiver took out of n and the rate (see Waivers)."]
    if fixed:
        lines += ["", CORRECTED_NOTE]
    if why := not_included(card, md, lambda text: f"`{code(text)}`"):
        lines += ["", why]
    if card.get("overall"):
        o = card["overall"]
        lines += ["", f"Overall score {fmt(o['score'])} against {fmt(o['threshold'])} "
                  f"(`{code(o['formula'])}`)."]
    return lines


def reasons(card: Card) -> list[str]:
    rows = [[r["decision"], f"`{code(r['code'])}`", md(r.get("category", "")),
             md(r["message"]), f"`{code(r['spec_path'])}`"] for r in card["reasons"]]
    return ["### Reasons", "", *(_table(["decision", "code", "category", "message",
                                         "spec path"], rows) if rows else
                                 ["No condition holds against this run."])]


def caveats(card: Card) -> list[str]:
    """The policy's caveats: what these measurements cannot show."""
    said = card.get("caveats")
    return ["### Caveats", "", *(f"- {md(c)}" for c in said)] if said else []


def reliability(card: Card) -> list[str]:
    rows = []
    for name, b in (card.get("reliability") or {}).items():
        if b:
            rows.append([md(name), fmt(b["pass_hat_k"]), b["k"], b["pass_hat_k_cases"],
                         fmt(b["consistency"]), b["flaky_count"], flaky_named(b, md)])
    return ["### Reliability", "", *_table(["category", "pass^k", "k", "cases", "consistency",
                                            "flaky", "flaky cases"], rows),
            "", FLAKY_NOTE] if rows else []


def evidence_checks(card: Card) -> list[str]:
    """Controls, validation and coverage: what the evidence could and could not show."""
    lines = ["### Controls, validation and coverage", ""]
    if card.get("controls"):
        c = card["controls"]
        lines.append(f"- Controls: {c['passed']} of {c['total']} known-bad controls caught "
                     f"({c['failed']} missed).")
    if card.get("validation"):
        v = card["validation"]
        counts = ", ".join(f"{md(k)} {n}" for k, n in v["rows"].items())
        lines.append(f"- Validation ({'strict' if v['strict'] else 'lenient'}): {counts}; "
                     f"failed captures {v['capture_errors']}"
                     + ("; validation failed." if v["failed"] else "."))
    cov = card["coverage"]
    lines.append(f"- Coverage: {cov['records']} input records, {cov['rows']} agent rows, "
                 f"{cov['control_rows']} control rows; {cov['cases_observed']} of "
                 f"{cov['cases']} suite cases observed.")
    if cov.get("cases_short_count"):
        short = ", ".join(f"{md(s['case'])} ({s['runs']} of {s['trials']})"
                          for s in cov["cases_short"])
        lines.append(f"- {cov['cases_short_count']} case(s) with fewer runs than trials: "
                     f"{short}.")
    if cov.get("record_problems"):
        problems = ", ".join(f"`{code(k)}` {n}" for k, n in cov["record_problems"].items())
        lines.append(f"- Record problems: {problems}.")
    grouped = validation_groups(card)
    if grouped:
        group, by_group = grouped
        lines += ["", *_table([md(group), *(k.lower() for k in CLASSES)],
                              [[md(name), *(n.get(k, 0) for k in CLASSES)]
                               for name, n in by_group.items()])]
    return lines


CLASSES = ("LABELED", "UNLABELED", "INVALID")


def validation_groups(card: Card) -> tuple[str, dict[str, dict[str, int]]] | None:
    """What validation counted rows by (the input format's group: ``dimension`` for
    assevra-jsonl) and each group's row classes; None when nothing was validated."""
    for key, counts in (card.get("validation") or {}).items():
        if key.startswith("by_"):
            return key[3:], counts
    return None


def _n3(value: Any, signed: bool = False) -> str:
    """A number with 3 decimals (1 is 1.000; ``signed``: +0.250), null as an en dash."""
    if value is None or isinstance(value, bool):
        return "–"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _test_said(t: Card) -> str:
    """The paired test's settings in words."""
    said = (f"Regressed and improved are decided by the paired test {t['test']} at alpha "
            f"{t['alpha']}, multiplicity {t['multiplicity']}, clusters by {t['cluster_by']}")
    if t.get("bootstrap"):
        said += (f", {t['bootstrap']['iterations']} bootstrap resamples with seed "
                 f"{t['bootstrap']['seed']}")
    return said + "."


def _power_said(power: Card) -> str:
    """The power settings in words."""
    said = (f"Power: the chance that the comparison sees a drop of {power['effect']} in a "
            "category it decides")
    if power["min_power"] is not None:
        said += (f", required to reach {power['min_power']} (below it a stable category is "
                 "UNDERPOWERED)")
    if power["discordance"]:
        said += f", assuming at least {power['discordance']} of pairs discordant"
    return said + ("; \"mde\" is the smallest drop it sees with that power, \"cases to "
                   "reach it\" how many cases would.")


def comparison(card: Card) -> list[str]:
    c = card.get("comparison")
    if not c:
        return []
    lines = ["### Comparison with the baseline", "",
             f"Status **{c['status']}**{' (required)' if c['required'] else ''}; regressed: "
             f"{'yes' if c['regressed'] else 'no'}." + "".join(f" {md(r)}." for r in c["reasons"])]
    if c.get("baseline"):
        b = c["baseline"]
        lines[-1] += (f" Baseline `{code(b.get('scorecard_sha256'))}` of "
                      f"{md(b.get('evaluation') or '?')}, label {md(b.get('label') or '–')}, "
                      f"signed {md(b.get('generated_at') or '?')}, decision "
                      f"{md(b.get('decision'))}, signer `{code(b.get('signer'))}`.")
    if c.get("selection"):
        sel = c["selection"]
        lines[-1] += (f" Chosen by label {md(sel['label'])} from the history folder; "
                      f"{sel['skipped']} scorecard(s) skipped"
                      + "".join(f"; {md(r)}" for r in sel["skipped_reasons"]) + ".")
    test, power = c.get("test"), c.get("power")
    if test:
        lines[-1] += " " + _test_said(test)
    if power:
        lines[-1] += " " + _power_said(power)
    header = ["category", "status", "rate", "baseline", "delta"]
    if test:
        header += ["pairs", "b (pass→fail)", "c (fail→pass)", "unpaired now / baseline",
                   "unscored now / baseline", "p", "p adjusted"]
    if power:
        header += ["power", "mde", "cases to reach it"]
    header.append("McNemar p (informational)")
    rows = []
    for name, x in c["categories"].items():
        row = [md(name), x["status"], _n3(x.get("rate")), _n3(x.get("baseline_rate")),
               _n3(x.get("delta"), signed=True)]
        if test:
            t = x.get("paired") or {}
            unpaired, unscored = t.get("unpaired") or {}, t.get("unscored") or {}
            row += [str(t.get("pairs", "–")), str(t.get("b", "–")), str(t.get("c", "–")),
                    f"{unpaired.get('current', '–')} / {unpaired.get('baseline', '–')}",
                    f"{unscored.get('current', '–')} / {unscored.get('baseline', '–')}",
                    _n3(t.get("p_value")), _n3(t.get("p_adjusted"))]
        if power:
            q = x.get("power") or {}
            row += [_n3(q.get("power")), _n3(q.get("mde")),
                    f"{q['cases_needed']} ({q['more_cases']} more)"
                    if q.get("cases_needed") is not None else
                    "none would" if q.get("power") is not None else "–"]
        row.append(_n3(x["mcnemar"]["p"]) if x.get("mcnemar") else "–")
        rows.append(row)
    fixes = [[md(f["id"]), f["status"], md(f["reason"])] for f in c.get("fixes") or []]
    return lines + (["", *_table(header, rows)] if rows else []) + \
        (["", "Fixes of the baseline's findings:", "",
          *_table(["finding", "fix", "why"], fixes)] if fixes else [])


def calibration(card: Card) -> list[str]:
    c = card.get("calibration")
    if not c:
        return []
    lines = ["### Judge calibration", "",
             f"Status **{c['status']}**{' (required)' if c['required'] else ''}, min_kappa "
             f"{fmt(c['min_kappa'])}." + (f" {md(c['reason'])}." if c["reason"] else "")]
    if c.get("artifact"):
        a = c["artifact"]
        lines[-1] += (f" Artifact `{code(a.get('sha256'))}`, signer `{code(a.get('signer'))}`"
                      f", signed {md(a.get('generated_at') or 'at an unstated time')}.")
    rows = [[md(name), fmt(x["n"]), fmt(x["kappa"]), fmt(x["accuracy"]), fmt(x["sensitivity"]),
             fmt(x["specificity"]), "yes" if x["calibrated"] else f"no: {md(x['why'])}"]
            for name, x in c["categories"].items()]
    return lines + (["", *_table(["category", "n", "kappa", "accuracy", "sensitivity",
                                  "specificity", "calibrated"], rows)] if rows else [])


def provenance(card: Card) -> list[str]:
    p = card.get("provenance")
    if not p:
        return []
    specs = p["specs"]
    line = f"Specs: **{specs['status'].replace('_', ' ')}**"
    if specs.get("signer"):
        line += f", signed by governance key `{code(specs['signer'][:16])}`"
    if specs["status"] == "not_checked":
        line += " (the run had no --governance-key)"
    line += "." + "".join(f" {md(d)}." for d in specs.get("differences", []))
    rows = [[md(name), a["status"], f"`{code((a.get('signer') or '-')[:16])}`",
             md(a.get("predicate_type") or "-")] for name, a in p["inputs"].items()]
    return ["### Provenance", "", line,
            *(["", *_table(["input", "attestation", "signer", "predicate type"], rows)]
              if rows else [])]


def waivers(card: Card) -> list[str]:
    w = card.get("waivers")
    if not w:
        return []
    lines = [f"### Waivers (as of {md(w['as_of'])})", ""]
    for e in w["entries"]:
        scope = "; ".join(f"{md(k)}: {', '.join(md(v) for v in vs)}"
                          for k, vs in e["scope"].items())
        lines.append(f"- {md(e['id'])}: {e['status']}, {e['rows_waived']} FAIL row(s) "
                     f"waived, approved by {md(e['approver'])}, last day {md(e['expires'])}"
                     + (f" ({md(e['note'])})" if e.get("note") else "")
                     + f"; scope {scope or 'everything'}; justification: "
                     f"{md(e['justification'])}")
    return lines


def check_lines(f: dict[str, Any]) -> list[str]:
    """Each check of a finding: the inspection, then what it expected and observed."""
    lines = []
    for c in f.get("checks", []):
        lines.append(f"  - `{code(c.get('inspection', '?'))}` ({code(c.get('type', '?'))}) on "
                     f"{md(c.get('unit', '?'))}, {c.get('status', '?')}: "
                     + expected_observed(c, md))
    return lines


def findings(card: Card) -> list[str]:
    listed = card["findings"]
    if not listed:
        return []
    lines = ["### Findings", ""]
    if any(f.get("fix") for f in listed):
        lines += [RERUN_NOTE, ""]
    total = card.get("findings_count", len(listed))
    if total > min(len(listed), FINDINGS_SHOWN):
        lines += [f"{total} findings in all; this summary shows the first "
                  f"{min(len(listed), FINDINGS_SHOWN)} and findings.jsonl holds every one.", ""]
    for f in listed[:FINDINGS_SHOWN]:
        said = f"- **{md(f['id'])}** ({f['severity']}"
        said += f", worst {f['worst_status']})" if f.get("worst_status") else ")"
        if f.get("fix"):
            said += f": {md(f['fix']['title'])}. Fix: {md(f['fix']['action'])}"
        elif f.get("message"):
            said += f": {md(f['message'])}"
        elif needs_no_fix_text(f):
            said += f": {what_failed(f, md)}"
        lines.append(said)
        if f.get("fix"):
            lines.append(f"  - Verify: {md(f['fix']['verification'])}")
        said_more = [e for e in f.get("evidence", []) if e not in _STATUSES]
        if said_more:
            lines.append("  - " + "; ".join(md(e) for e in said_more))
        lines += check_lines(f)
        if needs_no_fix_text(f):
            lines.append(f"  - {no_fix(f, md)}")
    return lines


def agent_card(card: Card) -> list[str]:
    a = card.get("agent_card")
    if not a:
        return []
    rows = [[md(c["name"]), md(c["edition"]), *(a["counts"][c["catalogue"]][k] for k in
                                                ("evidenced", "partial", "not evidenced"))]
            for c in a["catalogues"]]
    return ["### Agent Card", "", md(a["disclaimer"]), "",
            *_table(["catalogue", "edition", "evidenced", "partial", "not evidenced"], rows),
            "", "Every entry and its evidence is in scorecard.html and scorecard.json."]


def hashes(card: Card) -> list[str]:
    """Every digest the scorecard records; its own is in the signature files."""
    def digest(value: Any) -> str:
        return f"`{code(value)}`" if value else "none"
    rows = [["policy_sha256", digest(card["policy_sha256"])],
            ["suite_sha256", digest(card["suite_sha256"])],
            ["judge_sha256", digest(card.get("judge_sha256"))],
            *([f"input {md(name)} ({md(i.get('format'))})", digest(i["sha256"])]
              for name, i in card["inputs"].items()),
            ["rows_sha256 (rows.jsonl)", digest(card["rows_sha256"])],
            ["findings_sha256 (findings.jsonl)", digest(card["findings_sha256"])]]
    return ["### Hashes", "", *_table(["digest", "SHA-256"], rows), "", SCORECARD_DIGEST]


def foot(card: Card, signer: str = "") -> list[str]:
    key = (f"the key with fingerprint `{code(signer)}` (its keyid: the SHA-256 of the raw "
           "Ed25519 public key, as the envelope names it)" if signer else
           "the run's key (its fingerprint was not given to this report)")
    return ["### Signature", "",
            f"Signed by {key}: scorecard.json.sig signs scorecard.json, and the statement in "
            "scorecard.intoto.jsonl names this report and every other evidence file by "
            "digest. A fingerprint says which key signed, not whose it is: verify with "
            "`engine verify scorecard.json --trusted-key runner-signing.pub.pem`, "
            "pinning the signer's public key obtained out of band, never a key shipped "
            "beside the evidence.", "", GENERATED_AT]


SECTIONS: tuple[Callable[[Card], list[str]], ...] = (
    head, categories, reasons, caveats, reliability, evidence_checks, comparison, calibration,
    provenance, waivers,
    findings,
    agent_card, hashes, foot)


def unsigned_foot(card: Card, signer: str = "") -> list[str]:
    return ["### Signature", "",
            "**Unsigned.** No signature covers "
            "this report or scorecard.json, so nothing shows who made them or that they are "
            "unchanged, and there is no signing time. A signed run (`engine run --key`) is "
            "verified with `engine verify "
            "scorecard.json --trusted-key runner-signing.pub.pem`, pinning the signer's "
            "public key obtained out of band."]


def markdown(card: Card, signed: bool = True, signer: str = "") -> str:
    """scorecard.md, ready for a CI step summary (``signed``: whether a signature will
    cover it; ``signer``: the fingerprint of the key that will sign; the last section says
    which)."""
    lines: list[str] = []
    for section in SECTIONS if signed else (*SECTIONS[:-1], unsigned_foot):
        part = section(card, signer) if section in (foot, unsigned_foot) else section(card)
        if part:
            lines += [*part, ""]
        if section is head and not signed:  # said first, not only in the last paragraph
            lines += ["**Unsigned**: no signature covers this scorecard (see the last "
                      "paragraph).", ""]
    return "\n".join(lines)

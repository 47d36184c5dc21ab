"""Artifacts and backend selection (TA301-TA304)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from itertools import combinations

from tokaudit.records import Provenance
from tokaudit.artifacts.pattern import CL100K_PATTERN, search_pattern
from tokaudit.checks.registry import rule
from tokaudit.ids import IdRanges
from tokaudit.model.detection import dynamo_regex_model_type, remote_tokenizer_module, smg_detects_kimi
from tokaudit.model.loaders import TRANSFORMERS_RANK_FILE_NAMES, transformers_finds_ranks
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Finding, Severity
from tokaudit.report.text import plural, token_text


@rule("TA301")
def slow_fallback_risk(model: TokenizerModel) -> Iterator[Finding]:
    a = model.artifacts
    if a.tokenizer_json is not None and a.tokenizer_json.name != "tokenizer.json":  # read by its content
        yield slow_fallback_risk.finding(
            f"{a.tokenizer_json.name} is a tokenizer.json under another name: transformers' AutoTokenizer reads one "
            "only "
            "as tokenizer.json and fails to load this directory (tokenizers' Tokenizer.from_file and a gateway given "
            "the "
            "file's path read it). Ship it as tokenizer.json for transformers.",
            location=Provenance(a.tokenizer_json.name),
            details={"vocab_artifact": model.vocab_artifact, "remote_module": None, "transformers_loads": False},
        )
        return
    if a.tokenizer_json is not None or a.gguf_only:  # a GGUF's readers convert from it by design
        return
    module = remote_tokenizer_module(model)
    if module:
        how = (
            f"the remote-code class in {module}.py (a PreTrainedTokenizer in pure Python, only with trust_remote_code)"
        )
    elif a.tiktoken is not None and not transformers_finds_ranks(model):
        yield slow_fallback_risk.finding(
            f"there is no tokenizer.json, and transformers' AutoTokenizer looks for a rank file only under the names "
            f"{' and '.join(TRANSFORMERS_RANK_FILE_NAMES)}, not {a.tiktoken.name}: it fails to load this directory. "
            "tiktoken "
            "and files-only gateways read the ranks; ship a tokenizer.json saved from the reference tokenizer for "
            "transformers.",
            location=Provenance(model.vocab_artifact),
            details={"vocab_artifact": model.vocab_artifact, "remote_module": module, "transformers_loads": False},
        )
        return
    elif a.tiktoken is not None:
        how = (
            f"a TokenizersBackend converted from {a.tiktoken.name} at load time (with cl100k's regex unless told "
            "otherwise)"
        )
    else:
        how = f"a tokenizer converted from {model.vocab_artifact} at load time, or the slow Python class"
    yield slow_fallback_risk.finding(
        f"there is no tokenizer.json, so transformers uses {how}. Slow and converted tokenizers differ from the fast "
        "path "
        "(ids, added-token handling, speed), and concurrent first loads have fallen back to a half-implemented Python "
        "backend (NotImplementedError in get_vocab). Ship a tokenizer.json saved from the reference tokenizer.",
        location=Provenance(model.vocab_artifact),
        details={"vocab_artifact": model.vocab_artifact, "remote_module": module},
    )


@rule("TA302")
def remote_code_required(model: TokenizerModel) -> Iterator[Finding]:
    a = model.artifacts
    for rc in a.remote_code:  # what the static reader gave up on is said, never silently skipped
        problems = [f"{where}: {why}" for where, why in rc.not_understood]
        if rc.syntax_error:
            problems.insert(0, f"{rc.name}: not parsed ({rc.syntax_error})")
        if problems:
            yield remote_code_required.finding(
                f"{rc.name} is only partly understood by tokaudit's static reader: {'; '.join(problems[:5])}. "
                "What it declares there (pattern, reserved slots, special tokens) is not in the loader table.",
                severity=Severity.NOTE,
                location=rc.not_understood[0][0] if rc.not_understood else Provenance(rc.name),
                details={"module": rc.name, "not_understood": problems},
            )
    tc = a.tokenizer_config
    if tc is None:
        return
    module = remote_tokenizer_module(model)
    defined = {cls: rc.name for rc in a.remote_code for cls in rc.classes}
    if module is None and tc.tokenizer_class in defined:
        module = defined[tc.tokenizer_class].removesuffix(".py")
    if module is None:
        return
    present = (a.root / f"{module}.py").is_file()
    key = "auto_map.AutoTokenizer" if "AutoTokenizer" in tc.auto_map else "tokenizer_class"
    if present:
        message = (
            f"the tokenizer is Python code ({module}.py, present): transformers loads it only with "
            "trust_remote_code=True, and gateways without Python (smg, Dynamo, tiktoken-rs) re-implement it from "
            "the data files; check the loader table for what each of them maps."
        )
        severity = Severity.WARNING
    else:
        message = (
            f"{key} names {module}.py, which is not in the model directory: transformers cannot load this tokenizer "
            "even with trust_remote_code."
        )
        severity = Severity.ERROR
    yield remote_code_required.finding(
        message,
        severity=severity,
        location=Provenance(tc.name, key=key),
        details={"module": f"{module}.py", "present": present, "tokenizer_class": tc.tokenizer_class},
    )


def _vocabularies(model: TokenizerModel) -> list[tuple[str, Mapping[int, bytes]]]:
    return model.artifacts.vocabularies()


@rule("TA303")
def artifact_disagreement(model: TokenizerModel) -> Iterator[Finding]:
    vocabs = _vocabularies(model)
    for (name_a, va), (name_b, vb) in combinations(vocabs, 2):
        differ = [i for i, token in va.items() if i in vb and vb[i] != token]
        only_a = len(va.keys() - vb.keys())
        only_b = len(vb.keys() - va.keys())
        if not differ and not only_a and not only_b:
            continue
        ids = IdRanges.from_ids(differ)
        examples = [{"id": i, name_a: token_text(va[i]), name_b: token_text(vb[i])} for i in sorted(differ)[:10]]
        shown = "; ".join(f"{e['id']}: {e[name_a]} vs {e[name_b]}" for e in examples[:3])
        yield artifact_disagreement.finding(
            f"{name_a} and {name_b} disagree: {plural(len(differ), 'id')} {'has' if len(differ) == 1 else 'have'} "
            "different bytes"
            + (f" ({shown})" if shown else "")
            + f", {plural(only_a, 'id')} only in {name_a}, {only_b} only in {name_b}. Loaders that prefer one file "
            "over the other "
            "(smg: tokenizer.json first; Dynamo: the file it is handed) produce different ids for the same text.",
            location=Provenance(name_b),
            ids=ids if ids else None,
            details={
                "subject": f"{name_a}|{name_b}",
                "artifacts": [name_a, name_b],
                "examples": examples,
                f"only_in_{name_a}": only_a,
                f"only_in_{name_b}": only_b,
            },
        )
    yield from _sentencepiece_vs_tokenizer_json(model)
    yield from _merges_vs_vocab_json(model)


def _merges_vs_vocab_json(model: TokenizerModel) -> Iterator[Finding]:
    """merges.txt naming a token vocab.json lacks: tokenizers (every fast loader) refuses to build the
    BPE model from the pair, while transformers' slow GPT2Tokenizer loads it."""
    a = model.artifacts
    if a.vocab_json is None or a.merges is None:
        return
    from tokaudit.artifacts.text_files import unknown_merges  # loaded already with the files it reads

    bad = unknown_merges(a.vocab_json, a.merges)
    if not bad:
        return
    line, (left, right), missing = bad[0]
    yield artifact_disagreement.finding(
        f"{a.merges.name} and {a.vocab_json.name} disagree: {plural(len(bad), 'merge')} "
        f"name{'s' if len(bad) == 1 else ''} a token "
        f"{a.vocab_json.name} lacks (line {line}: {left!r} + {right!r}, {missing!r} is missing). tokenizers refuses "
        "to build the "
        "BPE model (fast loaders, Rust gateways fail to load); transformers' slow tokenizer loads it.",
        location=Provenance(a.merges.name, line=line),
        details={
            "subject": f"{a.merges.name}|{a.vocab_json.name}",
            "artifacts": [a.merges.name, a.vocab_json.name],
            "unknown_merges": len(bad),
            "first_line": line,
        },
    )


def _sentencepiece_vs_tokenizer_json(model: TokenizerModel) -> Iterator[Finding]:
    """tokenizer.model next to tokenizer.json (Llama 2, Mistral, Gemma): the same piece string per id.
    Strings, not bytes: both spell spaces as '▁' and bytes as '<0xNN>', and a control piece is the
    added token of the same text. Added tokens past the pieces (a ``<pad>`` appended by the repo) are
    not a disagreement: the slow tokenizer adds them from tokenizer_config.json too."""
    a = model.artifacts
    sp, tj = a.sentencepiece, a.tokenizer_json
    if sp is None or tj is None:
        return
    fast = dict(tj.vocab.items())
    for tok in tj.added_tokens:
        if tok.id is not None:
            fast.setdefault(tok.id, tok.content)
    differ = [i for i, p in enumerate(sp.pieces) if i in fast and fast[i] != p.piece]
    missing = [i for i in range(len(sp.pieces)) if i not in fast]
    if not differ and not missing:
        return
    examples = [{"id": i, sp.name: sp.pieces[i].piece, tj.name: fast[i]} for i in differ[:10]]
    shown = "; ".join(
        f"{e['id']}: {token_text(str(e[sp.name]).encode())} vs {token_text(str(e[tj.name]).encode())}"
        for e in examples[:3]
    )
    yield artifact_disagreement.finding(
        f"{sp.name} and {tj.name} disagree: {len(differ)} id(s) with a different piece string"
        + (f" ({shown})" if shown else "")
        + f", {len(missing)} piece id(s) of {sp.name} missing from {tj.name}. "
        f"The slow tokenizer and llama.cpp (which read "
        f"{sp.name}) and the fast one (which reads {tj.name}) then give the same text different ids.",
        location=Provenance(tj.name),
        ids=IdRanges.from_ids(differ + missing),
        details={
            "subject": f"{sp.name}|{tj.name}",
            "artifacts": [sp.name, tj.name],
            "examples": examples,
            "different": len(differ),
            f"missing_from_{tj.name}": len(missing),
        },
    )


@rule("TA304")
def pattern_unknown(model: TokenizerModel) -> Iterator[Finding]:
    a = model.artifacts
    search = search_pattern(a)
    if search.blocked is not None:
        # never borrowed silently: tokenizer.json's pattern may not be the one the remote code runs
        yield pattern_unknown.finding(
            f"{search.blocked}. The tiktoken backend is therefore decode-only: it does not take another file's "
            "pattern, "
            "because comparing the remote code's pattern with tokenizer.json's is what compare is for.",
            location=search.blocked_at,
            details={"blocked": search.blocked, "has_tokenizer_json": a.tokenizer_json is not None},
        )
        return
    if a.tiktoken is None or a.tokenizer_json is not None or search.pattern is not None:
        return
    kimi = smg_detects_kimi(model)
    dynamo = dynamo_regex_model_type(model)
    fallbacks = {
        "transformers (TikTokenConverter)": "cl100k_base",
        "smg": f"Kimi's Han-aware regex ({kimi})" if kimi else "cl100k_base",
        "Dynamo": f"Kimi's regex (model_type {dynamo})" if dynamo else "none: it refuses to load",
    }
    listed = "; ".join(f"{k}: {v}" for k, v in fallbacks.items())
    yield pattern_unknown.finding(
        f"{a.tiktoken.name} holds ranks but no file declares the pre-tokenizer regex (pat_str): each loader guesses — "
        f"{listed}. "
        "A wrong regex splits text differently from training (Han, digits, contractions), so token counts and ids "
        "differ.",
        location=Provenance(a.tiktoken.name),
        details={"fallbacks": fallbacks, "cl100k_pattern": CL100K_PATTERN},
    )


@rule("TA306", deep=True)
def gateway_fallback(model: TokenizerModel) -> Iterator[Finding]:
    """Deep: loading tokenizer.json with fastokens costs seconds of CPU on a large vocabulary."""
    from tokaudit.checks.progress import advance
    from tokaudit.model.fastokens_probe import fallback_details, fallback_message, installed, probe_fastokens

    tj = model.artifacts.tokenizer_json
    if tj is None or not installed():
        return
    advance("fastokens load (TA306)", 0, 1)
    probe = probe_fastokens(tj.path)
    advance("fastokens load (TA306)", 1, 1)
    if probe.error is None:
        return
    yield gateway_fallback.finding(
        fallback_message(probe, tj.name), location=Provenance(tj.name), details=fallback_details(probe)
    )

"""Every finding code tokaudit can emit: code, stable name, default severity and a one-line summary.

Plain data below both ``checks`` and ``report``: renderers (SARIF rule descriptions, README tables)
read it without importing the rules, and the rule modules' own codes are checked against it by the
tests (``tests/test_integrations.py``), so a code's name or default severity cannot drift.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CodeInfo:
    """One finding code as the catalog writes it."""

    code: str
    name: str
    #: ``error``, ``warning`` or ``note`` (a finding may be raised at another level; this is the default)
    severity: str
    summary: str


# fmt: off
_ROWS = (
    ("TA001", "unused-suppression", "note", "A per-target ignore in [tool.tokaudit] matched no finding."),
    ("TA010", "baseline-reason-missing", "warning", "require-reason is on and baseline entries have no reason: their "
                                                    "findings are reported."),
    ("TA101", "vocab-gap", "error", "Ids inside the declared vocabulary that a loader cannot map."),
    ("TA102", "id-collision", "error", "Two different tokens claim one id, across artifacts or because a loader "
                                       "reassigns an added token."),
    ("TA103", "id-drift", "warning", "An added token's declared id differs from the id a loader gives its content."),
    ("TA104", "size-mismatch", "error", "Mapped ids at or beyond the declared size, or embedding rows that differ "
                                        "from vocab_size."),
    ("TA105", "placeholder-encodable", "warning", "Reserved placeholder tokens that plain user text encodes to a "
                                                  "control id."),
    ("TA201", "special-token-missing", "error", "A bos/eos/pad/unk token named in a config file is not in the "
                                                "vocabulary or points into a gap."),
    ("TA202", "eos-mismatch", "warning", "End-of-sequence sets disagree across the configs and the chat template's "
                                         "turn terminator."),
    ("TA203", "control-token-not-special", "warning", "Added tokens shaped like control tokens but marked special: "
                                                      "false."),
    ("TA204", "added-token-flags-mismatch", "warning", "special/lstrip/rstrip/normalized/single_word differ between "
                                                       "tokenizer.json and tokenizer_config.json."),
    ("TA205", "template-token-unregistered", "error", "A control-token literal in the chat template is not a "
                                                      "registered token or encodes to several ids."),
    ("TA206", "empty-token", "error", "A token whose content is empty."),
    ("TA207", "eog-mismatch", "error", "The chat template's end-of-turn token is end-of-generation for llama.cpp (by "
                                       "its text) but not the GGUF's eos id."),
    ("TA208", "token-type-mismatch", "warning", "A GGUF token type that disagrees with what the token is: a word "
                                                "typed CONTROL, a control-looking token typed otherwise."),
    ("TA209", "default-special-id", "warning", "A special id the GGUF does not set, which llama.cpp fills with its "
                                               "model family's default."),
    ("TA210", "special-addition-divergence", "warning", "Backends add different BOS/EOS tokens when encoding with "
                                                        "add_special_tokens=True."),
    ("TA220", "stop-token-suppressed", "error", "A generation_config.json setting keeps transformers from sampling an "
                                                "end-of-sequence id (suppress_tokens, bad_words_ids, sequence_bias, "
                                                "begin_suppress_tokens, min_new_tokens, min_length)."),
    ("TA301", "slow-fallback-risk", "warning", "No tokenizer.json: transformers must build a slow, converted or "
                                               "remote-code tokenizer."),
    ("TA302", "remote-code-required", "warning", "auto_map or tokenizer_class needs the model's own Python code."),
    ("TA303", "artifact-disagreement", "error", "Two vocabulary artifacts give one id different bytes."),
    ("TA304", "pattern-unknown", "warning", "tiktoken ranks with no pre-tokenizer pattern: each loader falls back to "
                                            "its own regex."),
    ("TA305", "pattern-portability", "warning", "The pre-tokenizer pattern splits text differently in another regex "
                                                "engine."),
    ("TA306", "gateway-fallback", "note", "A gateway's optional fast encoder cannot load the model, so the gateway "
                                          "silently falls back (Dynamo + fastokens)."),
    ("TA307", "gguf-pre-tokenizer", "error", "A BPE GGUF whose tokenizer.ggml.pre is missing, 'default' or unknown to "
                                             "llama.cpp, or does not match the HF tokenizer.json."),
    ("TA308", "gguf-merges-missing", "error", "A BPE GGUF without tokenizer.ggml.merges (llama.cpp refuses it), or "
                                              "with another merge count than the HF tokenizer.json."),
    ("TA309", "loader-rebuild", "error", "The class transformers builds from these files replaces tokenizer.json's "
                                         "pipeline and encodes differently."),
    ("TA310", "decoder-mismatch", "error", "tokenizer.json's decoder does not undo its pre-tokenizer (a ByteLevel "
                                           "pre-tokenizer without a ByteLevel decoder, or a null decoder)."),
    ("TA401", "partial-utf8-token", "note", "Tokens that are not valid UTF-8 on their own; streaming must hold their "
                                            "bytes."),
    ("TA402", "unreachable-token", "warning", "Tokens that never come out of encoding their own text (Magikarp's "
                                              "categories)."),
    ("TA501", "unmapped-id", "error", "The stream holds an id a files-only loader cannot map, or one outside the "
                                      "vocabulary."),
    ("TA502", "incomplete-utf8", "error", "The stream ends with bytes held inside a multi-byte character."),
    ("TA503", "stream-mismatch", "error", "A detokenizer's concatenated chunks differ from the full decode."),
    ("TA504", "text-rewritten", "error", "Text already emitted would have to change."),
    ("TA505", "replacement-char", "warning", "U+FFFD emitted where the full decode has none."),
    ("TA506", "stop-split", "error", "A stop is detected late, leaked or split by a detokenizer."),
    ("TA507", "tool-call-json", "error", "Tool-call arguments in the stream are not valid JSON."),
    ("TA508", "prompt-leak", "error", "Prompt text appears in the first chunk."),
    ("TA509", "chunk-variance", "error", "Re-chunking the same ids into steps of 1..8 changes a detokenizer's output."),
    ("TA510", "detokenizer-stall", "warning", "A detokenizer holds 256 ids without emitting: clients see nothing and "
                                              "each step re-decodes the held window."),
    ("TA601", "encode-mismatch", "error", "Two backends encode the same text to different ids."),
    ("TA602", "decode-mismatch", "error", "Two backends decode the same ids to different text."),
    ("TA603", "roundtrip-failure", "error", "decode(encode(text)) is not the text."),
    ("TA604", "unknown-id-behaviour", "warning", "Backends differ on ids in a gap, at or beyond the declared end, or "
                                                 "negative."),
    ("TA605", "backend-crash", "error", "An exception or Rust panic inside a backend."),
    ("TA606", "golden-mismatch", "error", "A backend encodes a text of the golden file (compare --golden) to other "
                                          "ids than the file expects."),
    ("TA701", "id-token-mismatch", "error", "A draft id maps to other bytes (or none) in the target."),
    ("TA702", "draft-size-mismatch", "warning", "The draft and the target declare different vocabulary sizes."),
    ("TA703", "special-token-divergence", "warning", "Special tokens differ between the draft and the target (id, "
                                                     "content or flag)."),
    ("TA704", "token-count-drift", "warning", "diff --corpus: the corpus's total token count grows by more than "
                                              "--max-growth from TARGET_A to TARGET_B."),
    ("TA801", "template-render-error", "error", "A serving stack cannot render a built-in request (the finding names "
                                                "the stacks that fail)."),
    ("TA802", "template-engine-divergence", "error", "A stack's template engine renders its own variables other than "
                                                     "Jinja2 does (error when the tokens differ)."),
    ("TA803", "double-bos", "warning", "The rendered prompt, tokenized with special tokens added, starts with two BOS "
                                       "ids."),
    ("TA804", "template-token-split", "error", "A control-token literal in the rendered prompt does not encode to its "
                                               "one registered id."),
    ("TA805", "generation-prompt", "warning", "The generation prompt does not end with the assistant header the "
                                              "template writes before an assistant turn."),
    ("TA806", "tool-call-dropped", "error", "A request's past tool call (name or arguments) never reaches the "
                                            "rendered prompt, although the template offers tools."),
    ("TA807", "prefix-instability", "warning", "Turn k's prompt and reply, as the template renders them, are not a "
                                               "prefix of turn k+1's prompt."),
    ("TA808", "template-source-disagreement", "warning", "chat_template.jinja, tokenizer_config.json, "
                                                         "chat_template.json and a GGUF's template disagree."),
    ("TA810", "python-repr-leak", "error", "A stack's prompt holds Python's repr of a request value (a dict or list "
                                           "printed by Python, None for a null content)."),
    ("TA811", "content-dropped", "error", "A message's text or a tool result is missing from a stack's prompt, or "
                                          "comes out of order."),
    ("TA812", "unbalanced-markers", "warning", "A turn or tool marker the template writes is opened and not closed "
                                               "(or closed without being opened) in a stack's prompt."),
    ("TA813", "date-dependent-prompt", "note", "The prompt holds today's date: it differs between two dates, and "
                                               "prefix caches miss from there on."),
    ("TA820", "tool-call-roundtrip", "error", "A tool call the template teaches does not come back intact through the "
                                              "stack's detokenizer and tool parser."),
    ("TA821", "reasoning-roundtrip", "error", "The reasoning parser puts content (or the tool call) into reasoning, "
                                              "or reasoning into content."),
    ("TA822", "parser-startup", "error", "The stack refuses the named parser with this tokenizer at start-up."),
    ("TA823", "stream-parse-divergence", "warning", "Streamed and whole parses of the same output differ, or the step "
                                                    "size changes the result."),
    ("TA824", "reasoning-marker-in-prompt", "warning", "The generation prompt already holds a reasoning marker, so a "
                                                       "parser that assumes reasoning is open misplaces the output."),
    ("TA825", "reasoning-prefill", "note", "The generation prompt opens reasoning: output cut by max_tokens is "
                                           "reasoning, not content."),
    ("TA850", "template-injection", "error", "The chat template uses sandbox-escape or introspection patterns "
                                             "(underscore attributes, |attr, self, engine globals' attributes, "
                                             "include/import)."),
    ("TA851", "hidden-instruction", "warning", "The chat template writes text only when a message's content matches "
                                               "a string."),
    ("TA852", "invisible-characters", "warning", "Bidi controls, zero-width or tag characters in a chat template, an "
                                                 "added token's text or a config string."),
    ("TA853", "ollama-template-substitution", "note", "ollama create would replace the GGUF's chat template with one "
                                                      "of Ollama's own Go templates."),
)
# fmt: on

CATALOG: dict[str, CodeInfo] = {row[0]: CodeInfo(*row) for row in _ROWS}


def lookup(code: str) -> CodeInfo | None:
    return CATALOG.get(code)

"""The text ``compare`` feeds every backend: a built-in corpus aimed at known failure classes, and
user corpora (a case per line, or whole files).

The built-in corpus is deterministic for a given seed: fixed texts per failure class, every
special-token string with near misses, control and surrogate-adjacent code points, a sweep over
every Unicode scalar value (chunked), and seeded generators in the style of llama.cpp's
``test-tokenizer-random.py`` (whitespace, punctuation and added-token strips).
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tokaudit.artifacts.safe_files import read_bytes
from tokaudit.errors import InputError


@dataclass(frozen=True)
class Case:
    #: Where the text comes from: "builtin:emoji", "builtin:sweep U+4E00..U+4FFF", "corpus.txt:12".
    source: str
    text: str


SCRIPTS = {
    "english": "The quick brown fox jumps over the lazy dog. I'm sure you've heard they'll say it's fine, we'd better "
    "CHECK.",
    "cjk": "机器学习是人工智能的一个分支。今天天气很好，我们一起去公园散步吧。學習中文需要時間。",
    "japanese": "機械学習は人工知能の一分野です。ひらがな、カタカナ、そして漢字を組み合わせます。ｶﾀｶﾅ",
    "korean": "기계 학습은 인공지능의 한 분야입니다. 오늘은 날씨가 정말 좋네요! 한글 ᄀᄁ ㄱㄲ",
    "thai": "การเรียนรู้ของเครื่องเป็นสาขาหนึ่งของปัญญาประดิษฐ์ สวัสดีครับ ภาษาไทยไม่มีช่องว่างระหว่างคำ",
    "arabic": "التعلم الآلي هو فرع من فروع الذكاء الاصطناعي. مرحبا بكم! ١٢٣٤ ‏RTL‏ mark",
    "hebrew": "למידת מכונה היא תחום בבינה מלאכותית. שָׁלוֹם",
    "devanagari": "मशीन लर्निंग कृत्रिम बुद्धिमत्ता की एक शाखा है। नमस्ते, आप कैसे हैं? क्षत्रिय ॐ १२३",
    "cyrillic": "Машинное обучение — это раздел искусственного интеллекта. Київ, Ґ, ё, Ё.",
    "greek": "Η μηχανική μάθηση είναι ένας κλάδος της τεχνητής νοημοσύνης; ΆΈΉ ς σ Σ",
    "latin-accented": "Größe, Straße, Übung; ¿Qué tal? Ça va, merci. Dzień dobry. Tiếng Việt có dấu. ǅ ǈ ǋ ß ẞ ﬁ ﬀ",
    "mixed": "我想在apple工作1314151天～ Hello世界 abc中文def 東京Tokyo ∑x² ≤ 10⁶",
}

EMOJI = {
    "zwj": "family 👨‍👩‍👧‍👦 couple 👩‍❤️‍👨 rainbow flag 🏳️‍🌈 pirate 🏴‍☠️",
    "skin-tones": "👍 👍🏻 👍🏼 👍🏽 👍🏾 👍🏿 🧑🏽‍💻 👩🏿‍🔬",
    "flags-keycaps": "🇺🇸🇯🇵🇩🇪 #️⃣ 1️⃣ 🔟 ©️ ®️ ™️",
    "variation": "☀️ ☀ ❤️ ❤ ✔️ ✔︎ 🦙.cpp 🎉🎉🎉 😂😂",
}

COMBINING = {
    "marks": "e\u0301 a\u0300\u0301\u0302 n\u0303 Z\u0335\u0327\u0328\u0311\u0306 \u0301\u0301 leading",
    "nfc-nfd": "é é Å Å ﬃ ﬃ Ω Ω ｱ ｱ",
    "indic-marks": "क्‍ष क्‌ष \u093c\u094d",
    "hangul-jamo": "\u1100\u1161\u11a8 각",
}

WHITESPACE = {
    "runs": "a  b   c    d\t\te\t \tf",
    "newlines": "line1\nline2\r\nline3\rline4\n\n\nline5\r\n\r\n",
    "leading-trailing": "   Hello\n    Hello  \n\t Hello\t",
    "unicode-spaces": "a\u00a0b\u2002c\u2003d\u2009e\u200bf\u3000g\u2028h\u2029i\u1680j\u202fk\u205fl",
    "only-spaces": "        ",
    "only-newlines": "\n\n\n\n",
    "empty": "",
    # runs past 16 characters: SentencePiece vocabularies hold whitespace pieces up to 16 ▁ (Mistral), and a
    # converter that orders their equal-score merges wrongly splits longer runs differently (issue 31)
    "long-runs": "a" + " " * 17 + "b" + " " * 24 + "c" + " " * 33 + "d" + " " * 40 + "e",
    "deep-indentation": "def f():\n"
    + "".join(" " * (4 * depth) + f"if x{depth}:\n" for depth in range(1, 9))
    + " " * 36
    + "return 1\n",
    "mixed-tabs": "\tif x:\n\t    y = 1\n    \tz = 2\n\t\t\t\t\t\tw = 3\n \t \t \t \t v\n" + "\t" * 20 + "end",
}

CODE = {
    "python": 'def f(x: int) -> list[int]:\n    """Doc."""\n'
    "    return [i ** 2 for i in range(x) if i % 3 != 0]  # 🚀\n",
    "c": "for (int i = 0; i < n; ++i) { total += values[i]; }  /* sum */\n#include <stdio.h>\n",
    "json": '{"vocab_size": 163840, "eos_token_id": [163585, 163586], "name": "kimi", "ok": true, "x": null}',
    "html": "<div class=\"a\"><p id='b'>Hello &amp; world</p><br/></div>",
    "shell": "set -euo pipefail; for f in *.json; do echo \"$f\" | jq '.[]' >/dev/null; done",
    "sql": "SELECT id, name FROM t WHERE x >= 10 AND y <> 'z' ORDER BY id DESC LIMIT 5;",
    "punctuation": "!!!!!! ?!?! ... ,,, ;; -- ------=======  `````` ''' \"\"\" ((([[[{{{}}}]]]))) @@## $$%% ^^&& **",
    "contractions": "'s 't 're 've 'm 'll 'd 'RE 'M 'D We'Ve a'lL don't I'M y'all",
}

NUMBERS = {
    "digits": "3 33 333 3333 33333 333333 3333333 33333333 3.3 3..3 3...3",
    "dates": "2024-01-15 09:30:00, 15/01/2024, Jan 15th 2024, 2025-06-30T23:59:59Z",
    "amounts": "$1,204,311.55 €3.14 ¥100 1e-9 -0.000123 0x1F 0b1011 1_000_000 ½ ¼ ² ³ ⅓",
    "other-digits": "١٢٣ ४५६ ๗๘๙ ０１２ 𝟘𝟙𝟚 ⑴ ⑵ Ⅻ 〇",
}

#: Surrogate-adjacent and other boundary code points (a lone surrogate is not a str that can be UTF-8 encoded).
BOUNDARY_CODE_POINTS = [
    0xD7FF, 0xE000, 0xFEFF, 0xFFFD, 0xFFFE, 0xFFFF, 0x10000, 0x1FFFF, 0xEFFFF, 0xF0000, 0x10FFFD, 0x10FFFE, 0x10FFFF,
]  # fmt: skip

#: Code points per sweep case, and how many consecutive ones share a line: the newline bounds every
#: pre-token, so the pure-Python BPE stays fast while each code point still meets its neighbours.
SWEEP_CHUNK = 2048
SWEEP_RUN = 8
#: Planes with assigned characters (BMP, SMP, SIP, TIP, SSP): swept code point by code point by default.
#: Planes 4-13 are unassigned and 15-16 private use in every Unicode version so far; by default they are
#: sampled (each plane's first and last 512, and every 97th), with ``full`` every scalar value.
FULL_PLANES = (0, 1, 2, 3, 14)
SAMPLE_EDGE = 512
SAMPLE_STRIDE = 97


def _static(name: str, texts: dict[str, str]) -> Iterator[Case]:
    for key, text in texts.items():
        yield Case(f"builtin:{name}/{key}", text)


def _special_cases(specials: Iterable[str]) -> Iterator[Case]:
    """Every special-token string alone, in context, wrapped in whitespace, and near misses of it."""
    for s in specials:
        yield Case(f"builtin:special {s}", s)
        yield Case(f"builtin:special {s} in context", f"Hello{s}world {s} {s}{s}\n{s}\n")
        near = [s[:-1], s[1:], s.upper() if s.upper() != s else s.lower(), s[:1] + " " + s[1:], s + s[-1:]]
        yield Case(f"builtin:special {s} near misses", " | ".join(n for n in near if n and n != s))


def _controls() -> Iterator[Case]:
    chars = [chr(c) for c in [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)]]
    yield Case("builtin:controls", "".join(f"a{c}b " for c in chars))
    yield Case("builtin:boundary code points", " ".join(f"x{chr(c)}y{chr(c)}" for c in BOUNDARY_CODE_POINTS))


def sweep_points(full: bool = False) -> Iterator[int]:
    """The Unicode scalar values of the sweep (surrogates are not scalar values), in order."""
    for plane in range(17):
        base = plane << 16
        for c in range(base, base + 0x10000):
            if 0xD800 <= c <= 0xDFFF:
                continue
            offset = c - base
            if (
                full
                or plane in FULL_PLANES
                or offset < SAMPLE_EDGE
                or offset >= 0x10000 - SAMPLE_EDGE
                or offset % SAMPLE_STRIDE == 0
            ):
                yield c


def _sweep(full: bool) -> Iterator[Case]:
    """The sweep in cases of SWEEP_CHUNK code points, SWEEP_RUN to a line."""
    points = list(sweep_points(full))
    for k in range(0, len(points), SWEEP_CHUNK):
        chunk = points[k : k + SWEEP_CHUNK]
        lines = ("".join(map(chr, chunk[j : j + SWEEP_RUN])) for j in range(0, len(chunk), SWEEP_RUN))
        yield Case(f"builtin:sweep U+{chunk[0]:04X}..U+{chunk[-1]:04X}", "\n".join(lines))


_WORDS = "the a of and to in is it you that he was for on are with as I his they be at one have this from".split()
_PUNCT = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + ["...", "--", "…", "«", "»", "“", "”", "¿", "¡", "·"]
_SPACES = ["", " ", "  ", "\t", "\n", "\r\n", "\n\n", " \n", "\u00a0", "\u3000", "   \t "]


def _generated(specials: list[str], seed: int, n: int) -> Iterator[Case]:
    """Seeded random strips, as llama.cpp's tokenizer tests generate them."""
    rng = random.Random(seed)
    for k in range(n):
        parts = [rng.choice(_SPACES) + rng.choice(_WORDS) + rng.choice(_SPACES) for _ in range(rng.randint(1, 8))]
        yield Case(f"builtin:random whitespace #{k}", "".join(parts))
    for k in range(n):
        parts = [rng.choice(_PUNCT) * rng.randint(1, 4) + rng.choice(_SPACES) for _ in range(rng.randint(1, 10))]
        yield Case(f"builtin:random punctuation #{k}", "".join(parts))
    if specials:
        for k in range(n):
            parts = [
                rng.choice(_SPACES) + rng.choice(specials + _WORDS) + rng.choice(_SPACES)
                for _ in range(rng.randint(1, 6))
            ]
            yield Case(f"builtin:random added-token strip #{k}", "".join(parts))
    pool = [
        chr(c)
        for c in (
            *range(0x20, 0x7F),
            *range(0xA0, 0x250),
            *range(0x370, 0x400),
            *range(0x3040, 0x3100),
            *range(0x4E00, 0x4F00),
        )
    ]
    pool += ["😀", "👍🏽", "\u200d", "\u0301", "\ufe0f", "\n", "\t", " "]
    for k in range(n):
        yield Case(f"builtin:random characters #{k}", "".join(rng.choice(pool) for _ in range(rng.randint(1, 40))))


def builtin_corpus(specials: Iterable[str], seed: int = 0, generated: int = 64, sweep: str = "planes") -> list[Case]:
    """The built-in corpus: readable failure classes first (so first examples are readable), the sweep last.

    ``sweep``: "planes" (default: every code point of the planes with assigned characters, the others
    sampled), "full" (all 1,112,064 scalar values) or "off".
    """
    specials = sorted(set(specials))
    cases: list[Case] = []
    for name, texts in (("scripts", SCRIPTS), ("emoji", EMOJI), ("combining", COMBINING), ("whitespace", WHITESPACE),
                        ("code", CODE), ("numbers", NUMBERS)):  # fmt: skip
        cases.extend(_static(name, texts))
    cases.extend(_special_cases(specials))
    cases.extend(_controls())
    cases.extend(_generated(specials, seed, generated))
    if sweep != "off":
        cases.extend(_sweep(full=sweep == "full"))
    return cases


#: Text a --corpus (a file, or all files of a directory) may hold: 8 MB of lines took 13.6 s and
#: 478 MiB through four backends, so 16 MiB stays inside a minute and 1.5 GB.
MAX_CORPUS_BYTES = 16 * 1024 * 1024
#: A case (a --whole-file file, or a line) is encoded whole by every backend (the reference one is pure Python): at
#: most this (issue 34: a 15 MB line took 24 s and 2.5 GB before a backend aborted).
MAX_WHOLE_FILE_BYTES = 1024 * 1024
#: Names a --corpus directory walk looks at, at most (a corpus given as ``~`` or ``/`` by mistake is said so
#: at once, not walked for minutes).
MAX_CORPUS_ENTRIES = 100_000


def _read_utf8(path: Path, limit: int = MAX_CORPUS_BYTES) -> str:
    data = read_bytes(path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"corpus is not UTF-8 (byte 0x{data[exc.start]:02X} at offset {exc.start})", file=str(path), line=line
        ) from None


def corpus_files(path: Path) -> list[Path]:
    """``path`` itself, or the regular files under it, sorted: hidden names and what is under them left out,
    symbolic links to directories not followed, at most MAX_CORPUS_ENTRIES names looked at."""
    if path.is_dir():
        files: list[Path] = []
        seen = 0
        for root, dirs, names in os.walk(path):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            seen += len(dirs) + len(names)
            if seen > MAX_CORPUS_ENTRIES:
                raise InputError(
                    f"the corpus directory holds more than {MAX_CORPUS_ENTRIES:,} files and directories; "
                    "give a smaller one (or a file)",
                    file=str(path),
                )
            files += [p for p in (Path(root, name) for name in names if not name.startswith(".")) if p.is_file()]
        if not files:
            raise InputError("corpus directory has no files", file=str(path))
        return sorted(files)
    if path.is_file():
        return [path]
    raise InputError("no such corpus file or directory", file=str(path))


def user_corpus(path: Path, whole_file: bool = False) -> list[Case]:
    """A case per non-empty line (line endings stripped), or one case per file with ``whole_file``."""
    cases: list[Case] = []
    total = 0
    for file in corpus_files(path):
        try:
            total += file.stat().st_size
        except OSError:
            pass
        if total > MAX_CORPUS_BYTES:
            raise InputError(
                f"the corpus is over the limit of {MAX_CORPUS_BYTES >> 20} MiB (reached at {file})", key="--corpus"
            )
        if whole_file:
            try:
                size = file.stat().st_size
            except OSError:
                size = 0
            if size > MAX_WHOLE_FILE_BYTES:
                raise InputError(
                    f"{file} is {size / 2**20:.1f} MiB; a whole-file case is at most {MAX_WHOLE_FILE_BYTES >> 20} MiB "
                    "(drop --whole-file to compare it line by line)",
                    key="--whole-file",
                )
        text = _read_utf8(file)
        if whole_file:
            cases.append(Case(str(file), text))
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if (
                len(line) > MAX_WHOLE_FILE_BYTES // 4
                and len(line.encode("utf-8", "surrogatepass")) > MAX_WHOLE_FILE_BYTES
            ):
                raise InputError(
                    f"a line over {MAX_WHOLE_FILE_BYTES >> 20} MiB: a case is encoded whole by every backend, so "
                    f"it is at most {MAX_WHOLE_FILE_BYTES >> 20} MiB (split the line)",
                    file=str(file),
                    line=number,
                )
            if line:
                cases.append(Case(f"{file}:{number}", line))
    return cases


def sample(cases: list[Case], n: int | None, seed: int) -> list[Case]:
    """``n`` cases picked at random (seeded), kept in corpus order; all of them when n is None or large."""
    if n is None or n >= len(cases):
        return cases
    if n < 0:
        raise InputError("must be at least 0", key="--sample")
    picked = sorted(random.Random(seed).sample(range(len(cases)), n))
    return [cases[i] for i in picked]

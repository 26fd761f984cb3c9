"""The names a leaderboard students may see gives them: stable pseudonyms, or their own choice.

By default a student is ``anon-`` and ten hex digits of HMAC-SHA256 of the id, keyed on a
key derived from the batch's grading secret (grader.batch.outputs.secret): the same for every
shard, every regrade and every merge of the class, and without the secret nobody can tell
whose it is, nor try ids to find out. A secret under grader.core.cases.SECRET_BITS could
be searched for through the pseudonyms themselves, so then the output folder's signing key
(grader.batch.outputs.private_file.signing_key) keys them instead, and they hold for that folder only.

The staff's overrides (grader.batch.outputs.overrides) give a student the name they chose (``alias``)
or take them off the board students see (``leaderboard,opt-out``). The staff copy of the
board keeps the real ids beside the names.

A chosen name must not read as someone else (``alias_problem``): it is NFKC-normalised
(fullwidth letters become plain ones), and refused when it holds an invisible character,
mixes scripts beyond those Unicode TS #39 lets go together (Latin with Han, kana, Bopomofo
or Hangul), or when its confusable skeleton (``skeleton``) is that of another student's
id, another chosen name or starts as ``anon-`` does. The look-alike data is Unicode's
confusables.txt as the confusable_homoglyphs package ships it.
"""

import functools
import hashlib
import hmac
import unicodedata

PREFIX = "anon-"
DIGITS = 10  # 40 bits: in a class of 1,000, two share one with a chance under 1 in a million
LABEL = "leaderboard pseudonyms"
MAX_ALIAS = 40


def key(out_dir):
    """The key of ``out_dir``'s pseudonyms (see the module's docstring)."""
    from grader.batch.outputs import private_file, secret
    from grader.core import cases

    seed = secret.stored(out_dir)
    if seed is not None and cases.secret_bits(seed) >= cases.SECRET_BITS:
        return cases.derive(seed, LABEL)
    return hmac.new(
        private_file.signing_key(out_dir), LABEL.encode("ascii"), hashlib.sha256
    ).digest()


def pseudonym(secret_key, student):
    digest = hmac.new(secret_key, student.encode("utf-8"), hashlib.sha256).hexdigest()
    return PREFIX + digest[:DIGITS]


def name(view, secret_key):
    """The name ``view`` (a record with the overrides applied) has on the public board."""
    return view.leaderboard_name or pseudonym(secret_key, view.student)


# Scripts that may share one name (TS #39's "highly restrictive" level); Common and
# Inherited characters (digits, punctuation, combining marks) go with any script.
_TOGETHER = (
    {"LATIN", "HAN", "HIRAGANA", "KATAKANA"},
    {"LATIN", "HAN", "BOPOMOFO"},
    {"LATIN", "HAN", "HANGUL"},
)
# Default-ignorable characters that Python still counts as printable: they draw nothing.
_INVISIBLE = frozenset(
    [
        0x034F,
        0x115F,
        0x1160,
        0x17B4,
        0x17B5,
        0x2800,
        0x3164,
        0xFFA0,
        *range(0x180B, 0x1810),
        *range(0xFE00, 0xFE10),
        *range(0xE0100, 0xE01F0),
    ]
)


def normal(alias):
    """A chosen name as it is kept and shown: NFKC-normalised."""
    return unicodedata.normalize("NFKC", alias)


@functools.lru_cache(maxsize=1)
def _prototypes():
    """{character: the one every character it may be mistaken for maps to}: the classes
    of Unicode's single-character confusables, each named by its lowest code point."""
    from confusable_homoglyphs.confusables import confusables_data

    parent = {}

    def root(char):
        while parent.setdefault(char, char) != char:
            char = parent[char]
        return char

    for char, glyphs in confusables_data.items():
        for glyph in glyphs:
            other = glyph["c"].replace("\u200e", "")  # right-to-left glyphs come wrapped
            if len(char) == 1 and len(other) == 1:
                first, second = sorted((root(char), root(other)))
                parent[second] = first
    return {char: root(char) for char in parent}


def skeleton(text):
    """The confusable skeleton of ``text`` (Unicode TS #39): two texts with one skeleton
    may be taken for each other. A look-alike of several characters (``rn`` for ``m``)
    is not mapped."""
    prototypes = _prototypes()
    text = unicodedata.normalize("NFD", normal(text))
    return unicodedata.normalize("NFD", "".join(prototypes.get(c, c) for c in text))


def skeletons(text):
    """``text``'s skeletons as written and case-folded: two texts that share one read
    alike, letter case aside (``I`` reads as ``l``, ``O`` as ``o``)."""
    return frozenset({skeleton(text), skeleton(normal(text).casefold())})


def alias_problem(alias, student, students):
    """Why ``alias`` (NFKC-normalised, ``normal``) cannot be ``student``'s name on the
    board, else ''. Names are the student's own text: one line of visible characters of
    scripts that go together, read as no pseudonym and as no other student's id (nobody
    may appear as someone else)."""
    if not alias or alias != " ".join(alias.split()):
        return "expected a name on one line, without control characters or extra spaces"
    hidden = [c for c in alias if not c.isprintable() or ord(c) in _INVISIBLE]
    if hidden:
        return "expected a name without invisible or control characters, got " + ", ".join(
            f"U+{ord(c):04X}" for c in hidden
        )
    if len(alias) > MAX_ALIAS:
        return f"expected a name of at most {MAX_ALIAS} characters, got {len(alias)}"
    from confusable_homoglyphs.categories import unique_aliases

    scripts = unique_aliases(alias) - {"COMMON", "INHERITED"}
    if len(scripts) > 1 and not any(scripts <= together for together in _TOGETHER):
        return (
            f"expected a name in one script, got {', '.join(sorted(scripts)).lower()} letters mixed"
        )
    mine = skeletons(alias)
    if any(key.startswith(skeleton(PREFIX)) for key in mine):
        return f"expected a name that does not read as {PREFIX!r}, which pseudonyms start with"
    taken = [other for other in students if other != student and skeletons(other) & mine]
    if taken:
        return f"expected a name that does not read as another student's id ({taken[0]!r})"
    return ""

"""Fonts that draw a picture's text as written: 李华 in a leaderboard, not \\u674e\\u534e.

matplotlib (3.6 and later) falls back along a ``font.family`` list glyph by glyph, so the
family DejaVu Sans (matplotlib's own) followed by any installed font that has the other
characters draws every name. Which fonts have them is read from each font's character
map through matplotlib's font manager; nothing is downloaded or required, and a character
no installed font has is reported, so that the picture can say so instead of showing boxes.
"""

import functools

BASE = "DejaVu Sans"
# Tried first, in this order, among those installed (then any other installed font).
CJK_FONTS = (
    "Noto Sans CJK SC",
    "Noto Sans CJK JP",
    "Noto Sans CJK TC",
    "Source Han Sans SC",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "Droid Sans Fallback",
    "SimHei",
    "Microsoft YaHei",
    "PingFang SC",
    "AR PL UMing CN",
)
# matplotlib's Last Resort font has a placeholder glyph for every character: it draws none.
PLACEHOLDERS = ("Last Resort",)
INSTALL_HINT = (
    "a CJK font such as Noto Sans CJK (Debian and Ubuntu: apt-get install fonts-noto-cjk)"
)


def family_for(texts):
    """(font family list, characters none of them has) for drawing ``texts``."""
    needed = {character for text in texts for character in str(text) if not character.isspace()}
    family, left = [BASE], needed - _characters(BASE)
    for name in _candidates():
        if not left:
            break
        drawn = left & _characters(name)
        if drawn:
            family.append(name)
            left -= drawn
    return family, left


def escaped(text, missing):
    """``text`` with each character of ``missing`` as a Python escape (\\u674e)."""
    return "".join(
        character.encode("unicode_escape").decode("ascii") if character in missing else character
        for character in str(text)
    )


@functools.lru_cache(maxsize=None)
def _candidates():
    from matplotlib import font_manager

    names = sorted(
        {
            font.name
            for font in font_manager.fontManager.ttflist
            if not font.name.startswith(PLACEHOLDERS) and font.name != BASE
        }
    )
    return tuple(
        [name for name in CJK_FONTS if name in names]
        + [name for name in names if name not in CJK_FONTS]
    )


@functools.lru_cache(maxsize=None)
def _characters(name):
    """Every character some regular face of the font ``name`` has a glyph for."""
    from matplotlib import font_manager, ft2font

    found = set()
    for font in font_manager.fontManager.ttflist:
        if font.name == name and font.style == "normal":
            try:
                found |= {chr(code) for code in ft2font.FT2Font(font.fname).get_charmap()}
            except (OSError, RuntimeError, ValueError):
                continue  # a font file matplotlib lists but cannot open draws nothing
    return frozenset(found)

"""The leaderboard students may see (grader.batch.outputs.leaderboard, grader.batch.outputs.pseudonyms):
pseudonyms by default, stable for one grading secret, names the students chose, an
opt-out, the staff copy with the real ids, and names drawn as written or said to be not."""

import csv

import pytest

from grader.batch.outputs import secret
from grader.batch.outputs import leaderboard, override_view, overrides, pseudonyms, reports
from grader.tests.test_speed import timed_record

SECRET = "5eed5eed5eed5eed5eed5eed5eed5eed"
HEADER = "student,change,case,value,reason,by,date\n"


def records():
    return [
        timed_record("ada", 0.4, 0.2),
        timed_record("李华", 1.0, 0.2),
        timed_record("mia", 0.3, 0.2),
    ]


def staff_rows(*rows, students=("ada", "李华", "mia")):
    return overrides.Overrides(
        overrides.parse(
            HEADER + "".join(f"{row},TA Wang,2026-12-04\n" for row in rows),
            "overrides.csv",
            set(students),
            {},
            30,
        )
    )


def written(out, book=None, secret_text=SECRET):
    secret.keep(out, secret_text)
    leaderboard.write(out, [override_view.applied(record, book) for record in records()])
    return {
        name: list(csv.DictReader(open(out / name, encoding="utf-8-sig")))
        for name in ("leaderboard.csv", "leaderboard-staff.csv")
    }


def test_students_see_pseudonyms_and_the_staff_copy_keeps_the_ids(tmp_path):
    boards = written(tmp_path / "out")
    public, staff = boards["leaderboard.csv"], boards["leaderboard-staff.csv"]
    assert [row["student"] for row in staff] == ["mia", "ada", "李华"]
    assert "student" not in public[0]
    assert [row["name"] for row in public] == [row["name"] for row in staff]
    assert all(row["name"].startswith("anon-") and len(row["name"]) == 15 for row in public)
    text = (tmp_path / "out" / "leaderboard.csv").read_text(encoding="utf-8-sig")
    assert not {"ada", "mia", "李华"} & set(text.replace(",", " ").split())
    for name in ("leaderboard.png", "leaderboard-staff.png"):
        assert (tmp_path / "out" / name).read_bytes()[:4] == b"\x89PNG"


def test_pseudonyms_hold_for_one_secret_and_differ_for_another(tmp_path):
    names = [
        [row["name"] for row in written(tmp_path / folder, secret_text=text)["leaderboard.csv"]]
        for folder, text in (("a", SECRET), ("b", SECRET), ("c", SECRET[::-1]))
    ]
    assert names[0] == names[1] and not set(names[0]) & set(names[2])


def test_a_short_secret_keys_them_on_the_folder_so_they_cannot_be_searched(tmp_path):
    """A 12-bit secret could be found by trying every value against a known id's pseudonym:
    the folder's own random signing key keys them then."""
    short = [
        written(tmp_path / folder, secret_text="2026")["leaderboard.csv"][0]["name"]
        for folder in ("a", "b")
    ]
    assert short[0] != short[1]
    assert pseudonyms.key(tmp_path / "a") == pseudonyms.key(tmp_path / "a")


def test_a_chosen_name_and_an_opt_out(tmp_path):
    book = staff_rows(
        "mia,alias,,小米,the name mia chose", "ada,leaderboard,,opt-out,ada asked by email"
    )
    boards = written(tmp_path / "out", book)
    assert [(row["rank"], row["name"]) for row in boards["leaderboard.csv"]] == [
        ("1", "小米"),
        ("2", pseudonyms.pseudonym(pseudonyms.key(tmp_path / "out"), "李华")),
    ]
    assert [
        (row["rank"], row["student"], row["public"]) for row in boards["leaderboard-staff.csv"]
    ] == [("1", "mia", "True"), ("2", "ada", "False"), ("3", "李华", "True")]


def test_nobody_on_the_public_board_leaves_no_picture_behind(tmp_path):
    out = tmp_path / "out"
    written(out)
    book = staff_rows(
        *(f"{student},leaderboard,,opt-out,asked" for student in ("ada", "李华", "mia"))
    )
    assert written(out, book)["leaderboard.csv"] == []
    assert not (out / "leaderboard.png").exists() and (out / "leaderboard-staff.png").exists()


@pytest.mark.parametrize(
    "alias, expected",
    [
        ("Ada", "not read as another student's id ('ada')"),
        ("ANON-123", "does not read as 'anon-'"),
        ("two  spaces", "on one line"),
        ("x" * 41, "at most 40 characters"),
        ("\u202eevil", "without invisible or control characters, got U+202E"),
        # look-alikes: Cyrillic letters, a zero-width space, another hyphen, fullwidth letters
        ("\u0430\u0501\u0430", "not read as another student's id ('ada')"),
        ("ada\u200b", "without invisible or control characters, got U+200B"),
        ("\u3164", "without invisible or control characters, got U+1160"),  # NFKC's filler
        ("anon\u20101234", "does not read as 'anon-'"),
        ("\uff41\uff4e\uff4f\uff4e-7", "does not read as 'anon-'"),
        ("P\u0430ul", "in one script, got cyrillic, latin letters mixed"),
    ],
)
def test_a_name_that_would_mislead_is_refused(alias, expected):
    with pytest.raises(overrides.OverridesError, match="column value: expected") as error:
        staff_rows(f"mia,alias,,{alias},chosen")
    assert expected in str(error.value)


def test_two_students_cannot_choose_one_name():
    with pytest.raises(
        overrides.OverridesError,
        match="row 3, column value: 'Fast' reads as 'fast', the name 'ada' chose in row 2",
    ):
        staff_rows("ada,alias,,fast,chosen", "mia,alias,,Fast,chosen")
    with pytest.raises(
        overrides.OverridesError, match="row 3, column value: '\u0440\u043e\u0440' reads as 'pop'"
    ):
        staff_rows("ada,alias,,pop,chosen", "mia,alias,,\u0440\u043e\u0440,chosen")


def test_a_name_is_kept_as_nfkc_and_may_mix_latin_with_han():
    rows = staff_rows(
        "mia,alias,,\uff2d\uff49\uff41 \u5c0f\u7c73,chosen",
        "ada,alias,,\u210d\U0001d556\U0001d55d\U0001d55d\U0001d560,chosen",
    ).rows
    assert [row.value for row in rows] == ["Mia \u5c0f\u7c73", "Hello"]


def test_the_feedback_tells_a_timed_student_their_name(tmp_path):
    out = tmp_path / "out"
    secret.keep(out, SECRET)
    record = records()[0]
    record["folder"] = "ada"
    reports.write_feedback(out, record, [])
    name = pseudonyms.pseudonym(pseudonyms.key(out), "ada")
    feedback = (out / "ada" / "feedback.md").read_text(encoding="utf-8")
    assert f"On the class leaderboard you are **{name}**." in feedback
    assert f"在全班可见的排行榜上，你的名字是 **{name}**。" in feedback
    reports.write_feedback(out, record, [], staff_rows("ada,alias,,Ada L.,chosen"))
    feedback = (out / "ada" / "feedback.md").read_text(encoding="utf-8")
    assert "Your name on the class leaderboard: **Ada L.**." in feedback
    assert "On the class leaderboard you are" not in feedback


def test_names_no_font_has_are_escaped_with_a_note_and_dollars_stay_text(monkeypatch):
    from benchmarks import fonts

    labels, family, note = leaderboard._labels(["ada", "$x^2$", "\u0378"])  # U+0378: unassigned
    assert labels[:2] == ["ada", r"\$x^2\$"] and labels[2] == "\\u0378"
    assert family[0] == "DejaVu Sans" and "no installed font has" in note
    monkeypatch.setattr(fonts, "family_for", lambda names: (["DejaVu Sans", "CJK"], set()))
    assert leaderboard._labels(["李华"]) == (["李华"], ["DejaVu Sans", "CJK"], "")
    board = leaderboard.frame([timed_record("$\\frac{a}$", 0.4, 0.2)], b"k")
    assert leaderboard.render(board, "student")[:4] == b"\x89PNG"


def test_fonts_are_found_by_what_they_draw():
    from benchmarks import fonts

    assert fonts.family_for(["ada 0.5x"]) == (["DejaVu Sans"], set())
    family, missing = fonts.family_for(["李华"])
    assert missing <= {"李", "华"}
    assert bool(missing) == (len(family) == 1), "a second font is listed only when it draws"


def test_share_hands_out_the_public_copy_only(tmp_path):
    from grader.batch.outputs import share
    from grader.core import cases

    out, catalogue = tmp_path / "out", cases.catalogue(0, "gpu")[:1]
    secret.keep(out, SECRET)
    timed = records()
    for record in timed:
        record["folder"] = pseudonyms.pseudonym(b"folder", record["student"])
        reports.write_student(out, record, catalogue)
    reports.write_class(out, timed, catalogue)
    share.build(out, tmp_path / "share")
    assert (tmp_path / "share" / "leaderboard.csv").read_bytes() == (
        out / "leaderboard.csv"
    ).read_bytes()
    assert (tmp_path / "share" / "leaderboard.png").is_file()
    assert not list((tmp_path / "share").glob("leaderboard-staff*"))

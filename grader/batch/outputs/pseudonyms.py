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
"""

import hashlib
import hmac

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
    return hmac.new(private_file.signing_key(out_dir), LABEL.encode("ascii"), hashlib.sha256).digest()


def pseudonym(secret_key, student):
    digest = hmac.new(secret_key, student.encode("utf-8"), hashlib.sha256).hexdigest()
    return PREFIX + digest[:DIGITS]


def name(view, secret_key):
    """The name ``view`` (a record with the overrides applied) has on the public board."""
    return view.get("leaderboard_name") or pseudonym(secret_key, view["student"])


def alias_problem(alias, student, students):
    """Why ``alias`` cannot be ``student``'s name on the board, else ''. Names are the
    student's own text: one line of printable characters, no pseudonym look-alike, and
    no other student's id (nobody may appear as someone else)."""
    from grader.batch.names import printable

    if not alias or alias != " ".join(alias.split()) or printable(alias) != alias:
        return "expected a name on one line, without control characters or extra spaces"
    if len(alias) > MAX_ALIAS:
        return f"expected a name of at most {MAX_ALIAS} characters, got {len(alias)}"
    if alias.lower().startswith(PREFIX):
        return f"expected a name that does not start with {PREFIX!r}, which pseudonyms do"
    taken = [other for other in students
             if other != student and other.casefold() == alias.casefold()]
    if taken:
        return f"expected a name that is not another student's id ({taken[0]!r})"
    return ""

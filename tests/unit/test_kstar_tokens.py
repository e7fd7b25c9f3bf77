"""KSTAR control tokens (seed 003 §7, X-22): signing, storing checks, delegation, verification order, lineage."""

from __future__ import annotations

import base64
import hashlib
import hmac
import tomllib
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from hypothesis import given, settings

from governance.kstar.domains import (
    BUILTIN_TOKEN_TYPES,
    EDUCATION_TOKEN_TYPES,
    TokenType,
    parse_token_type,
    scope_matches_pattern,
)
from governance.kstar.records import ControlToken, KstarRefusal, iso_to_ms, parse_record
from governance.kstar.tokens import (
    Verification,
    check_new_token,
    issuer_key,
    lineage,
    lineage_hash,
    public_key_b64,
    revoke,
    scope_covers,
    sign_token,
    signature_ok,
    token_signing_bytes,
    verify,
)
from hivemem.settings import parse_config, write_default_config

AT = "2026-01-31T15:00:00.000Z"
NOW = iso_to_ms(AT)
SMITH = "urn:principal:org:ieee:role:teacher:person:smith"
KEY = issuer_key(b"operator-secret", "school", "smith-claw")
TYPES: dict[str, TokenType] = {**BUILTIN_TOKEN_TYPES, **{t.name: t for t in EDUCATION_TOKEN_TYPES}}
TERM_END = "2026-06-30T00:00:00.000Z"


def token(token_id: str, type_: str = "evaluation_authority", scope: str = "course:CS101",
          permissions: tuple[str, ...] = ("evaluate", "feedback"), chain: tuple[str, ...] = (),
          expires_at: str | None = TERM_END, sign: bool = True, **more: Any) -> ControlToken:  # fmt: skip
    doc = {"token_id": token_id, "type": type_, "scope": scope, "permissions": list(permissions),
           "granted_by": SMITH, "delegation_chain": list(chain), "expires_at": expires_at, **more}  # fmt: skip
    t = parse_record("control_token", doc, AT)
    assert isinstance(t, ControlToken)
    return sign_token(t, KEY) if sign else t


# Smith holds a delegation token for CS101 and delegates evaluation to a TA, who delegates on to a grader.
ROOT = token("tok-root", "delegation", permissions=("evaluate", "feedback", "delegate"))
TA = token("tok-ta", permissions=("evaluate", "feedback", "delegate"), chain=("tok-root",))
GRADER = token("tok-grader", chain=("tok-ta", "tok-root"))
STORE = {t.token_id: t for t in (ROOT, TA, GRADER)}


def refusal(t: ControlToken, parents: dict[str, ControlToken] | None = None, at_ms: int = NOW) -> KstarRefusal:
    with pytest.raises(KstarRefusal) as info:
        check_new_token(t, STORE if parents is None else parents, TYPES, at_ms)
    return info.value


def child(**changes: Any) -> ControlToken:
    """A direct child of ROOT, valid unless changed."""
    base: dict[str, Any] = {"token_id": "tok-child", "chain": ("tok-root",)}
    return token(**{**base, **changes})


# ---------------------------------------------------------------------------------------------- signing


def test_a_signed_token_carries_its_key_lineage_and_a_valid_signature() -> None:
    assert signature_ok(ROOT) and signature_ok(GRADER)
    assert ROOT.signer_key == public_key_b64(KEY)
    assert len(base64.b64decode(ROOT.signature)) == 64
    assert GRADER.lineage_hash == lineage_hash(["tok-ta", "tok-root"])
    check_new_token(ROOT, {}, TYPES, NOW)
    check_new_token(TA, STORE, TYPES, NOW)
    check_new_token(GRADER, STORE, TYPES, NOW)


OTHER_KEY = public_key_b64(issuer_key(b"other", "school", "x"))


@pytest.mark.parametrize("field,value", [("scope", "course:CS102"), ("permissions", ["evaluate", "feedback", "x"]),
                                         ("expires_at", None), ("granted_by", "mallory"),
                                         ("signer_key", OTHER_KEY), ("delegation_chain", ["tok-x"])])  # fmt: skip
def test_changing_a_signed_field_breaks_the_signature(field: str, value: Any) -> None:
    tampered = ROOT.model_copy(update={field: value})
    assert not signature_ok(tampered)
    r = refusal(tampered, {})
    assert (r.code, r.detail) == ("TOKEN_BAD_SIGNATURE", "Invalid signature")


def test_unsigned_or_garbled_signatures_fail() -> None:
    assert not signature_ok(token("t", sign=False))
    assert not signature_ok(ROOT.model_copy(update={"signature": "not base64!"}))
    assert not signature_ok(ROOT.model_copy(update={"signer_key": base64.b64encode(b"short").decode()}))
    other = issuer_key(b"operator-secret", "school", "mallory-claw")
    forged = ROOT.model_copy(update={"signature": base64.b64encode(other.sign(token_signing_bytes(ROOT))).decode()})
    assert not signature_ok(forged)


def test_revocation_state_is_outside_the_signature() -> None:
    revoked = revoke(ROOT, "term ended", "2026-02-01T00:00:00Z")
    assert token_signing_bytes(revoked) == token_signing_bytes(ROOT)
    assert signature_ok(revoked)
    assert b"revoked" not in token_signing_bytes(revoked) and b"signature" not in token_signing_bytes(ROOT)


def test_issuer_keys_are_deterministic_per_claw() -> None:
    same = issuer_key(b"operator-secret", "school", "smith-claw")
    assert public_key_b64(same) == public_key_b64(KEY)
    assert public_key_b64(issuer_key(b"operator-secret", "school", "ta-claw")) != public_key_b64(KEY)
    assert public_key_b64(issuer_key(b"operator-secret", "other", "smith-claw")) != public_key_b64(KEY)
    with pytest.raises(ValueError, match="'\\|'"):
        issuer_key(b"s", "a|b", "c")


def test_lineage_hash_is_sha256_of_the_canonical_id_list() -> None:
    assert lineage_hash(["tok-ta", "tok-root"]) == "sha256:" + hashlib.sha256(b'["tok-ta","tok-root"]').hexdigest()
    assert lineage_hash([]) == "sha256:" + hashlib.sha256(b"[]").hexdigest()
    assert lineage_hash(["a", "b"]) != lineage_hash(["b", "a"])


def test_a_lineage_hash_that_is_not_the_chains_is_refused() -> None:
    wrong = TA.model_copy(update={"lineage_hash": lineage_hash(["tok-other"]), "signature": ""})
    signed = wrong.model_copy(update={"signature": base64.b64encode(KEY.sign(token_signing_bytes(wrong))).decode()})
    assert signature_ok(signed)
    assert refusal(signed).code == "TOKEN_LINEAGE_MISMATCH"


# ---------------------------------------------------------------------------------------------- types


def test_token_types_scope_patterns_and_permissions() -> None:
    assert refusal(token("t", "teleport")).code == "TOKEN_UNKNOWN_TYPE"
    assert refusal(token("t", scope="assignment:hw3")).code == "TOKEN_SCOPE_PATTERN"
    assert refusal(token("t", scope="course:CS101/week1")).code == "TOKEN_SCOPE_PATTERN"
    assert refusal(token("t", permissions=("evaluate",))).code == "TOKEN_PERMISSIONS_MISSING"
    check_new_token(token("t", permissions=("feedback", "evaluate", "comment")), {}, TYPES, NOW)
    check_new_token(token("t", "capability_grant", scope="*", permissions=()), {}, TYPES, NOW)


def test_session_tokens_need_an_expiry() -> None:
    assert refusal(token("s", "session", scope="session:sess-456", expires_at=None)).code == "TOKEN_EXPIRY_REQUIRED"
    check_new_token(token("s", "session", scope="session:sess-456"), {}, TYPES, NOW)
    check_new_token(token("g", "capability_grant", expires_at=None), {}, TYPES, NOW)  # no expiry, never expires


def test_scope_patterns() -> None:
    assert scope_matches_pattern("course:CS101", "course:{course_id}")
    assert scope_matches_pattern("anything:at/all", "*")
    for scope in ("course:", "course:CS101/week1", "course:CS101:x", "Course:CS101", "xcourse:CS101"):
        assert not scope_matches_pattern(scope, "course:{course_id}")
    assert scope_matches_pattern("org:ieee/course:CS101", "org:{org}/course:{course}")
    assert not scope_matches_pattern("course.x", "course.{a}x")  # '.' in a pattern is literal, not a regex


def test_parse_token_type() -> None:
    t = parse_token_type({"name": "evaluation_authority", "description": "Authority to evaluate student artifacts",
                          "scope_pattern": "course:{course_id}",
                          "required_permissions": ["evaluate", "feedback"]})  # fmt: skip
    assert t == EDUCATION_TOKEN_TYPES[0]
    for pattern in ("course:{", "course:*", "{1bad}", "course: {id}", ""):
        with pytest.raises(KstarRefusal) as info:
            parse_token_type({"name": "x", "description": "d", "scope_pattern": pattern})
        assert info.value.code == "KSTAR_INVALID_RECORD"


# ---------------------------------------------------------------------------------------------- delegation


def test_delegation_parents_must_exist_be_unrevoked_and_unexpired() -> None:
    assert refusal(child(), {}).code == "DELEGATION_PARENT_UNKNOWN"
    assert refusal(GRADER, {"tok-ta": TA}).code == "DELEGATION_PARENT_UNKNOWN"  # the root is missing
    revoked_root = revoke(ROOT, "left the school", AT)
    assert refusal(child(), {"tok-root": revoked_root}).code == "DELEGATION_PARENT_REVOKED"
    assert refusal(GRADER, {**STORE, "tok-root": revoked_root}).code == "DELEGATION_PARENT_REVOKED"
    end = iso_to_ms(TERM_END)
    check_new_token(child(), STORE, TYPES, end)  # at its expiry millisecond the parent is still valid
    assert refusal(child(), at_ms=end + 1).code == "DELEGATION_PARENT_EXPIRED"


def test_the_parent_must_be_a_delegation_or_hold_delegate() -> None:
    plain = token("tok-plain", "capability_grant", permissions=("evaluate", "feedback"))
    can = token("tok-can", "capability_grant", permissions=("evaluate", "feedback", "delegate"))
    parents = {"tok-plain": plain, "tok-can": can}
    assert refusal(child(chain=("tok-plain",)), parents).code == "DELEGATION_NOT_ALLOWED"
    check_new_token(child(chain=("tok-can",)), parents, TYPES, NOW)


def test_scope_narrowing() -> None:
    wide = token("tok-all", "delegation", scope="*", permissions=("evaluate", "feedback", "delegate"))
    parents = {**STORE, "tok-all": wide}
    check_new_token(child(chain=("tok-all",), scope="course:CS102"), parents, TYPES, NOW)  # '*' covers all
    assert refusal(child(scope="course:CS102")).code == "DELEGATION_SCOPE_WIDENED"
    assert refusal(child(scope="course:CS1010")).code == "DELEGATION_SCOPE_WIDENED"  # not at a boundary
    assert refusal(child(type_="capability_grant", scope="*")).code == "DELEGATION_SCOPE_WIDENED"
    for narrower in ("course:CS101/week1", "course:CS101:quiz"):
        check_new_token(child(type_="capability_grant", scope=narrower), STORE, TYPES, NOW)
    sub = token("tok-sub", "delegation", scope="course:CS101/week1", permissions=("evaluate", "feedback"),
                chain=("tok-root",))  # fmt: skip
    parents = {**STORE, "tok-sub": sub}
    check_new_token(sub, parents, TYPES, NOW)
    beyond = child(type_="capability_grant", chain=("tok-sub", "tok-root"))  # course:CS101 under .../week1
    assert refusal(beyond, parents).code == "DELEGATION_SCOPE_WIDENED"


def test_permissions_may_not_widen() -> None:
    assert refusal(child(permissions=("evaluate", "feedback", "grade"))).code == "DELEGATION_PERMISSIONS_WIDENED"
    check_new_token(child(type_="capability_grant", permissions=("feedback",)), STORE, TYPES, NOW)


def test_expiry_equal_to_the_parent_is_allowed_beyond_it_is_not() -> None:
    check_new_token(child(expires_at=TERM_END), STORE, TYPES, NOW)
    check_new_token(child(expires_at="2026-06-29T23:59:59.999Z"), STORE, TYPES, NOW)
    assert refusal(child(expires_at="2026-06-30T00:00:00.001Z")).code == "DELEGATION_EXPIRY_BEYOND_PARENT"
    assert refusal(child(expires_at=None)).code == "DELEGATION_EXPIRY_BEYOND_PARENT"
    forever = token("tok-forever", "delegation", permissions=("evaluate", "feedback"), expires_at=None)
    check_new_token(child(chain=("tok-forever",), expires_at=None), {"tok-forever": forever}, TYPES, NOW)


def test_the_chain_must_be_the_parents_own_chain_extended() -> None:
    assert refusal(child(chain=("tok-ta",))).code == "DELEGATION_CHAIN_BROKEN"  # tok-ta's root is left out
    assert refusal(child(chain=("tok-root", "tok-ta"))).code == "DELEGATION_CHAIN_BROKEN"  # wrong order
    assert refusal(child(chain=("tok-root", "tok-root"))).code == "DELEGATION_CHAIN_BROKEN"
    assert refusal(child(token_id="tok-root", chain=("tok-root",))).code == "DELEGATION_CHAIN_BROKEN"


def test_every_link_of_the_chain_is_checked() -> None:
    # A TA token that could not have been stored (it outlives the root) poisons the grader below it.
    bad_ta = token("tok-ta", permissions=("evaluate", "feedback", "delegate"), chain=("tok-root",), expires_at=None)
    assert refusal(GRADER, {**STORE, "tok-ta": bad_ta}).code == "DELEGATION_EXPIRY_BEYOND_PARENT"


# ---------------------------------------------------------------------------------------------- verify


def reason(v: Verification) -> tuple[str | None, str | None]:
    return v.code, v.reason


def test_verify_each_reason() -> None:
    assert verify(GRADER, "course:CS101", NOW, STORE) == Verification(True, None, None)
    assert reason(verify(None, "course:CS101", NOW, STORE)) == ("TOKEN_NOT_FOUND", "Token not found")
    assert reason(verify(revoke(GRADER, "r", AT), "course:CS101", NOW, STORE)) == ("TOKEN_REVOKED", "Token revoked")
    end = iso_to_ms(TERM_END)
    assert verify(GRADER, "course:CS101", end, STORE).valid  # expired only when expires_at < now
    assert reason(verify(GRADER, "course:CS101", end + 1, STORE)) == ("TOKEN_EXPIRED", "Token expired")
    assert reason(verify(GRADER, "course:CS102", NOW, STORE)) == ("TOKEN_SCOPE_MISMATCH", "Scope mismatch")
    revoked_root = {**STORE, "tok-root": revoke(ROOT, "left", AT)}
    assert reason(verify(GRADER, "course:CS101", NOW, revoked_root)) == ("TOKEN_ANCESTOR_REVOKED",
                                                                         "Ancestor token revoked")  # fmt: skip
    short_ta = {**STORE, "tok-ta": TA.model_copy(update={"expires_at": "2026-01-31T14:00:00.000Z"})}
    assert reason(verify(GRADER, "course:CS101", NOW, short_ta)) == ("TOKEN_ANCESTOR_EXPIRED", "Ancestor token expired")
    assert reason(verify(GRADER, "course:CS101", NOW, {"tok-ta": TA})) == ("TOKEN_ANCESTOR_UNKNOWN",
                                                                          "Ancestor token not found")  # fmt: skip


def test_verify_order_when_several_apply() -> None:
    dead = revoke(GRADER, "r", AT)
    broken = {"tok-ta": TA.model_copy(update={"expires_at": AT}), "tok-root": revoke(ROOT, "left", AT)}
    late = iso_to_ms(TERM_END) + 1
    assert verify(dead, "course:CS102", late, broken).code == "TOKEN_REVOKED"
    assert verify(GRADER, "course:CS102", late, broken).code == "TOKEN_EXPIRED"
    assert verify(GRADER, "course:CS102", NOW + 1, broken).code == "TOKEN_SCOPE_MISMATCH"
    assert verify(GRADER, "course:CS101", NOW + 1, broken).code == "TOKEN_ANCESTOR_REVOKED"
    assert verify(GRADER, "course:CS101", NOW + 1, {**broken, "tok-root": ROOT}).code == "TOKEN_ANCESTOR_EXPIRED"
    assert verify(GRADER, "course:CS101", NOW + 1, {"tok-ta": broken["tok-ta"]}).code == "TOKEN_ANCESTOR_EXPIRED"


def test_verify_scope_coverage() -> None:
    assert verify(ROOT, "course:CS101/week1", NOW, {}).valid
    assert verify(ROOT, "course:CS101:quiz", NOW, {}).valid
    for scope in ("course:CS1010", "course", "*", "course:CS101/../CS102", "course:CS101/", ""):
        assert verify(ROOT, scope, NOW, {}).code == "TOKEN_SCOPE_MISMATCH", scope


# ---------------------------------------------------------------------------------------------- lineage, revoke


def test_lineage_is_the_token_then_its_ancestors_nearest_first() -> None:
    assert [t.token_id for t in lineage("tok-grader", STORE)] == ["tok-grader", "tok-ta", "tok-root"]
    partial = {"tok-grader": GRADER, "tok-root": ROOT}  # tok-ta is missing: skipped
    assert [t.token_id for t in lineage("tok-grader", partial)] == ["tok-grader", "tok-root"]
    assert lineage("tok-root", STORE) == [ROOT]
    assert lineage("tok-none", STORE) == []


def test_revoke_sets_the_state_once() -> None:
    r = revoke(TA, "TA contract ended", "2026-02-01T10:00:00+01:00")
    assert (r.revoked, r.revoked_at, r.revocation_reason) == (True, "2026-02-01T09:00:00.000Z", "TA contract ended")
    assert not TA.revoked  # the original is untouched
    assert revoke(r, "again", "2026-03-01T00:00:00Z") is r
    for bad in ("", "   ", "a\x00b"):
        with pytest.raises(KstarRefusal) as info:
            revoke(TA, bad, AT)
        assert info.value.code == "KSTAR_INVALID_RECORD"


# ---------------------------------------------------------------------------------------------- properties

_SEGS = st.sampled_from(["course", "CS101", "CS1010", "week1", "quiz", "org"])
_SCOPES = st.one_of(
    st.just("*"),
    st.builds(lambda first, rest: first + "".join(sep + seg for sep, seg in rest),
              _SEGS, st.lists(st.tuples(st.sampled_from([":", "/"]), _SEGS), max_size=3)),
)  # fmt: skip


@given(_SCOPES, _SCOPES, _SCOPES)
def test_scope_coverage_is_transitive(a: str, b: str, c: str) -> None:
    assert scope_covers(a, a)
    if scope_covers(a, b) and scope_covers(b, c):
        assert scope_covers(a, c)


@settings(max_examples=150, deadline=None)
@given(parent_scope=_SCOPES, child_scope=_SCOPES, requested=_SCOPES)
def test_a_stored_child_never_verifies_for_more_than_its_parent(parent_scope: str, child_scope: str,
                                                                requested: str) -> None:  # fmt: skip
    parent = token("p", "delegation", scope=parent_scope, permissions=("delegate",))
    kid = token("c", "capability_grant", scope=child_scope, permissions=(), chain=("p",))
    try:
        check_new_token(kid, {"p": parent}, TYPES, NOW)
    except KstarRefusal as exc:
        assert exc.code == "DELEGATION_SCOPE_WIDENED"
        assert not scope_covers(parent_scope, child_scope)
        return
    if verify(kid, requested, NOW, {"p": parent}).valid:
        assert verify(parent, requested, NOW, {}).valid


def test_the_issuer_key_is_the_documented_formula_over_the_hex_decoded_secret(tmp_path: Path) -> None:
    """docs/kstar.md: HMAC-SHA256(key = bytes.fromhex(token_secret), message = "hivemem/kstar-issuer/v1|<tenant>|
    <clawId>") from the tenants file's [api] token_secret, as the server reads it."""
    path = tmp_path / "tenants.toml"
    write_default_config(path)
    in_file = tomllib.loads(path.read_text())["api"]["token_secret"]
    seed = hmac.new(bytes.fromhex(in_file), b"hivemem/kstar-issuer/v1|acme|claw-9", hashlib.sha256).digest()
    documented = Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    served = issuer_key(parse_config(tomllib.loads(path.read_text())).token_secret, "acme", "claw-9")
    assert served.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw) == documented

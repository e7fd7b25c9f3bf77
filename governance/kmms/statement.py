"""A question's statement form, and the query vector that blends the two.

A question about the user's life is answered by what the user *told*, in the shape of a statement: "Where do
I work?" by "my manager at Bluefin Analytics asked me to lead a new project". The embedding model scores a
question close to other questions and far from statements, so the question's own vector ranks "Thanks, wish me
luck." (0.14) above that evidence (0.12). The question's words put back in statement order ("i work") score
it 0.20 and the small talk 0.11. Rewriting a question as its declarative form is a query reformulation that
needs no model: the wh-word goes, the subject and the auxiliary swap back ("have I been" -> "i have been"),
do-support goes ("do I work" -> "i work"), and the wh-phrase's noun stays ("which concerts" -> "concerts").

The search ranks by the question's vector plus ``weight`` times the statement's, normalised (``blend``): the
question still says what is asked, the statement adds the shape of its answer. What a search reports
(similarity, confidence, abstention) is still read against the question's own vector
(``projections.kmms.own_similarity``). Measured on ``hivemem bench
memory`` (docs/kmms.md, "Retrieval"). A question this does not parse (no wh-word or auxiliary, a subject
question such as "who stayed with me?") keeps its own vector. Pure.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

_AUX = r"(?:do|does|did|am|is|are|was|were|have|has|had|can|could|will|would|should)"
_BE = frozenset({"am", "is", "are", "was", "were"})
_DO = frozenset({"do", "does", "did"})
_LEAD = (r"(?:(?:so|hey|ok|okay|and|also|remind me|tell me|quick question|do you (?:know|remember)|"
         r"can you (?:tell|remind) me),?\s+)*")  # fmt: skip
_WH = re.compile(
    rf"^{_LEAD}(?P<wh>what|which|where|who|whom|whose|when|how (?:many|much|long|often)|how)"
    rf"(?P<noun>(?: (?!{_AUX}\b)[\w'-]+){{0,3}}?)(?:(?P<clitic>'s|'re)| (?P<aux>{_AUX})) (?P<rest>.+)$"
)
_YES_NO = re.compile(rf"^{_LEAD}(?P<aux>{_AUX}) (?P<rest>(?:i|we)\b.*)$")
_PRONOUN = re.compile(r"^(?:i|we)\b ?")
_NOUN_PHRASE = re.compile(r"^(?:my|our|the|a|an)\b")
_PREPOSITION = frozenset({"in", "at", "to", "for", "from", "of", "with", "on", "into", "about"})


def _words(question: str) -> str:
    t = question.lower().replace("’", "'").strip().rstrip("?!. ")
    return " ".join(t.split())


def as_statement(question: str) -> str | None:
    """The declarative form of a question about someone ("Which concerts have I been to?" -> "concerts i have
    been to"), or None when it has none this can tell."""
    t = _words(question)
    if m := _YES_NO.match(t):
        aux, rest = m["aux"], m["rest"]
        subject = _PRONOUN.match(rest)
        after = rest[subject.end() :] if subject else rest
        pronoun = rest[: subject.end()].strip() if subject else ""
        return " ".join(w for w in (pronoun, "" if aux in _DO else aux, after) if w) or None
    m = _WH.match(t)
    if m is None:
        return None
    aux = m["aux"] or ("is" if m["clitic"] == "'s" else "are")
    noun, rest = m["noun"].strip(), m["rest"]
    if subject := _PRONOUN.match(rest):  # "which concerts have i been to" -> "concerts i have been to"
        pronoun, after = rest[: subject.end()].strip(), rest[subject.end() :]
        return " ".join(w for w in (noun, pronoun, "" if aux in _DO else aux, after) if w)
    if not _NOUN_PHRASE.match(rest):
        return None
    if aux in _DO:  # "where does my sister live" -> "my sister live"
        return " ".join(w for w in (noun, rest) if w)
    if aux not in _BE:
        return None
    # "what's my favourite café" -> "my favourite café is"; "which month is my birthday in" -> "my birthday is
    # in month"; "which café was my favourite" -> "my favourite was café"
    words = rest.split()
    tail = words.pop() if len(words) > 1 and words[-1] in _PREPOSITION else ""
    return " ".join(w for w in (" ".join(words), aux, tail, noun) if w)


def blend(question: Sequence[float], statement: Sequence[float], weight: float) -> list[float]:
    """``question + weight * statement``, normalised to unit length (cosine search)."""
    v = [a + weight * b for a, b in zip(question, statement, strict=True)]
    norm = math.sqrt(sum(x * x for x in v))
    return [x / norm for x in v] if norm > 0 else list(question)


def question_vectors(embed: Callable[[str], list[float]], question: str,
                     weight: float) -> tuple[list[float], list[float] | None]:  # fmt: skip
    """``question``'s own embedding (the question already without its date phrases), and the vector to rank by
    when it differs: the own blended with its statement form's (None when it has none, or ``weight`` is 0)."""
    own = embed(question)
    statement = as_statement(question) if weight > 0 else None
    if not statement:
        return own, None
    return own, blend(own, embed(statement), weight)

"""A deterministic synthetic long-memory benchmark in the shape of LongMemEval, for ``hivemem bench memory``.

Each user has a haystack of timestamped multi-turn sessions (user/assistant) spread over about six months before
the user's "now"; most are distractors (recipes, travel planning, coding help, books, fitness, shopping, small
talk, gardening, films and series, home repairs) drawn from many templates with randomised names, places, products
and paraphrases. Evidence sessions look the same, but one user turn (mostly not the first) also says a personal
fact as an aside. Questions carry a question date and the ids of their evidence sessions, in five categories (six
with ``shape="long"``):

* ``single-session``: a fact said once ("what did I study at university?");
* ``multi-session``: an aggregation over 2-3 sessions ("how many pets do I have?", "which cities did I visit?");
* ``knowledge-update``: a value that changed (moved, new job, new favourite); asked after the change, the newer
  value is the answer; both sessions are evidence, ``current_session_id`` is the newer one and
  ``superseded_value`` the old value;
* ``temporal-reasoning``: the answer depends on the question date: "what did I buy last weekend?" (with a decoy
  purchase some weeks earlier), "where was I living in March?" (asked after the move; the old value), and
  point-in-time questions ("where do I live?") asked *between* the two sessions of a change, where the older value
  is right and the newer session lies after the question date;
* ``abstention``: nothing in memory answers it; answer ``"unknown"``, no evidence;
* ``single-session-assistant`` (``shape="long"`` only): something the assistant recommended in one long reply ("which
  neighbourhood did you suggest I stay in?"), asked weeks later by the conversation's subject; a ``decoy`` session of
  the same user on the same subject does not name it (``bench.memory_replies``).

``shape="long"`` makes every assistant reply LongMemEval-sized (800-2,000 characters: paragraphs, lists, many named
things; ``bench.memory_replies.expand``) from a second random stream, so the sessions, facts and questions are those
of the default ``"short"`` corpus (plus the assistant questions, whose sessions take the place of distractors).

``point_in_time`` marks a question asked before a session that would change its answer (about 20 %); besides those,
most questions are dated before some of their user's sessions, so anything a search returns after the question
date is a future leak. Texts are PII-free for the regex stage (no e-mails, phone numbers or long digit runs), so
a ``redact`` memory keeps them verbatim. Question texts are written as a user would ask them, not from the
evidence's wording. The same seed gives the same corpus (byte for byte, see ``Corpus.dumps``).

``from_longmemeval`` reads the public LongMemEval JSON (one haystack per question) into the same ``Corpus`` shape.
"""

from __future__ import annotations

import hashlib
import json
import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.memory_replies import RECALLS, expand
from bench.memory_vocabulary import (
    BOOKS,
    BUGS,
    CITIES,
    DAYS,
    DISHES,
    EXERCISES,
    FIRST,
    GENRES,
    HERBS,
    INGREDIENTS,
    LIBS,
    MONTHS,
    PLANTS,
    PRODUCTS,
    PROG_LANGS,
    REPAIRS,
    SHOWS_FILMS,
    STORES,
)

CATEGORIES = ("single-session", "multi-session", "knowledge-update", "temporal-reasoning", "abstention",
              "single-session-assistant")  # fmt: skip
SHAPES = ("short", "long")
UNKNOWN = "unknown"
SPAN_DAYS = 182  # the haystack covers about six months before "now"
BASE_NOW = datetime(2026, 10, 1, 18, 0, tzinfo=UTC)  # users' "now" is 0-30 days before this


# --- records ---------------------------------------------------------------------------------------------------


@dataclass
class Turn:
    role: str  # "user" | "assistant"
    content: str


@dataclass
class Session:
    session_id: str
    user_id: str
    occurred_at: str  # ISO 8601, UTC ("...Z")
    turns: list[Turn]
    role: str = "distractor"  # "distractor" | "evidence" | "decoy" (a near miss for a temporal or assistant question)
    topic: str = ""

    def messages(self) -> list[dict[str, str]]:
        """The turns as the SDK takes them."""
        return [{"role": t.role, "content": t.content} for t in self.turns]

    def text(self) -> str:
        return "\n".join(f"{t.role}: {t.content}" for t in self.turns)


@dataclass
class Question:
    question_id: str
    user_id: str
    question: str
    question_date: str  # ISO 8601, UTC: the search's as_of
    answer: str
    evidence_session_ids: list[str]
    category: str
    current_session_id: str | None = None  # knowledge-update: the session with the newer value
    superseded_value: str | None = None  # knowledge-update: the older value
    point_in_time: bool = False  # a later session of the user would change the answer
    fact_kind: str = ""  # which generator made it (residence, pets, purchase, ...)


@dataclass
class User:
    user_id: str
    now: str  # ISO 8601: the end of the haystack
    sessions: list[Session]


@dataclass
class Corpus:
    seed: int
    users: list[User]
    questions: list[Question]
    source: str = "synthetic"

    def dumps(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, ensure_ascii=False, separators=(",", ":"))

    def save(self, path: str | Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(self.dumps(), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> Corpus:
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Corpus:
        users = [User(u["user_id"], u["now"], [Session(s["session_id"], s["user_id"], s["occurred_at"],
                                                       [Turn(**t) for t in s["turns"]], s.get("role", "distractor"),
                                                       s.get("topic", "")) for s in u["sessions"]])
                 for u in d["users"]]  # fmt: skip
        return cls(int(d.get("seed", 0)), users, [Question(**q) for q in d["questions"]], d.get("source", "?"))

    def sessions_by_id(self) -> dict[str, Session]:
        return {s.session_id: s for u in self.users for s in u.sessions}

    def stats(self) -> dict[str, Any]:
        sessions = [s for u in self.users for s in u.sessions]
        turns = [len(s.turns) for s in sessions]
        present = dict.fromkeys(q.category for q in self.questions)  # a public dataset's own categories too
        by_cat = {c: sum(q.category == c for q in self.questions) for c in (*CATEGORIES, *present)}
        by_id = self.sessions_by_id()
        later = sum(any(parse_iso(s.occurred_at) > parse_iso(q.question_date)
                        for s in next(u for u in self.users if u.user_id == q.user_id).sessions)
                    for q in self.questions)  # fmt: skip
        evidence = {e for q in self.questions for e in q.evidence_session_ids}
        replies = [len(t.content) for s in sessions for t in s.turns if t.role == "assistant"]
        return {
            "users": len(self.users),
            "sessions": len(sessions),
            "sessions_per_user_min": min((len(u.sessions) for u in self.users), default=0),
            "turns_min": min(turns, default=0),
            "turns_max": max(turns, default=0),
            "turns_mean": sum(turns) / len(turns) if turns else 0.0,
            "evidence_sessions": len(evidence & set(by_id)),
            "distractor_share": 1 - len(evidence) / len(sessions) if sessions else 0.0,
            "questions": len(self.questions),
            "by_category": by_cat,
            "point_in_time": sum(q.point_in_time for q in self.questions),
            "asked_before_later_sessions": later,
            "chars": sum(len(s.text()) for s in sessions),
            "reply_chars_mean": statistics.fmean(replies) if replies else 0.0,
        }


def iso(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(s: str) -> datetime:
    dt = datetime.fromisoformat(s.replace("Z", "+00:00"))
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def _slots(r: random.Random) -> dict[str, str]:
    """Fresh fillers for one session (every template picks what it needs)."""
    name, name2 = r.sample(FIRST, 2)
    city, city2 = r.sample(CITIES, 2)
    ing, ing2 = r.sample(INGREDIENTS, 2)
    book, book2 = r.sample(BOOKS, 2)
    prod, prod2 = r.sample(PRODUCTS, 2)
    return {
        "name": name, "name2": name2, "city": city, "city2": city2, "dish": r.choice(DISHES),
        "ing": ing, "ing2": ing2, "herb": r.choice(HERBS), "minutes": str(r.choice((10, 15, 20, 25, 30, 40, 45))),
        "temp": str(r.choice((180, 190, 200, 220))), "book": book[0], "author": book[1], "book2": book2[0],
        "author2": book2[1], "genre": r.choice(GENRES), "ex": r.choice(EXERCISES), "ex2": r.choice(EXERCISES),
        "reps": str(r.choice((5, 8, 10, 12, 15))), "sets": str(r.choice((3, 4, 5))),
        "weeks": str(r.choice((3, 4, 6, 8, 10, 12))), "prod": prod, "prod2": prod2, "store": r.choice(STORES),
        "price": str(r.choice((29, 45, 60, 79, 99, 129, 149, 199, 249, 349))), "lang": r.choice(PROG_LANGS),
        "lib": r.choice(LIBS), "bug": r.choice(BUGS), "film": r.choice(SHOWS_FILMS), "plant": r.choice(PLANTS),
        "repair": r.choice(REPAIRS), "day": r.choice(DAYS), "month": r.choice(MONTHS),
        "nights": str(r.choice((2, 3, 4, 5, 7, 10))), "budget": str(r.choice((300, 500, 800, 1200, 1500, 2000))),
        "km": str(r.choice((3, 5, 8, 10, 12, 15))), "pct": str(r.choice((10, 15, 20, 25, 30))),
    }  # fmt: skip


# --- distractor topics: exchanges of (user paraphrases, assistant paraphrases) ----------------------------------

Exchange = tuple[tuple[str, ...], tuple[str, ...]]


@dataclass(frozen=True)
class Topic:
    name: str
    openers: tuple[Exchange, ...]
    followups: tuple[Exchange, ...]


TOPICS: tuple[Topic, ...] = (
    Topic("recipes", (
        (("Can you give me a quick recipe for {dish}?", "I'd like to make {dish} tonight. Can you walk me through it?",
          "What's the simplest way to cook {dish} at home?"),
         ("Sure. Start by browning the {ing} in a hot pan, add the aromatics, then let it simmer for about {minutes} "
          "minutes. Finish with a handful of {herb} and taste for salt.",
          "Of course. Prep everything first, cook the {ing} until golden, then build the sauce and give it "
          "{minutes} minutes on low heat. A little {herb} at the end brightens it.")),
        (("I only have {ing} and {ing2} in the fridge. Any dinner ideas?",
          "What can I cook with {ing}, {ing2} and whatever is in the pantry?"),
         ("You could roast both at {temp} degrees with olive oil and garlic, then toss them with pasta or grains.",
          "A quick stir-fry works: {ing} first, then {ing2}, soy sauce, ginger and a splash of water.")),
        (("My {dish} always comes out a bit bland. What am I doing wrong?",
          "Why does my {dish} taste flat even though I follow the recipe?"),
         ("Usually it's salt and acid. Season in layers and finish with a squeeze of lemon or a splash of vinegar.",
          "Try blooming the spices in oil first and salting earlier; a bit of acid at the end helps a lot.")),
        (("What's a good substitute for {ing} in {dish}?",),
         ("{ing2} would work in most versions; adjust the cooking time because it cooks faster.",
          "You can swap in {ing2}. The texture changes a little but the flavours still work.")),
        (("I'm cooking for {name} on {day}. Something easy that still feels special?",
          "Friends are coming over on {day}; what's an impressive but low-effort main?"),
         ("A slow-roasted dish is ideal: it cooks while you host. {dish} with a crisp salad would be lovely.",
          "Go for {dish}; most of it can be prepared ahead, so you only finish it when guests arrive.")),
    ), (
        (("Could I make it ahead and reheat it?", "Can I prepare it the day before?"),
         ("Yes, it often tastes better the next day. Cool it quickly and reheat gently.",)),
        (("What would you serve on the side?", "Any side dish you'd pair with it?"),
         ("A green salad with a sharp vinaigrette, or some roasted {ing2}.", "Crusty bread and a simple salad.")),
        (("Is there a way to make it spicier?",),
         ("Add chili flakes with the garlic, or stir in a spoon of harissa at the end for a fresher heat.",)),
        (("Can I use {herb} instead?", "I'm out of fresh herbs, is dried {herb} okay?"),
         ("Yes, use about a third as much dried; add it earlier so it has time to soften.",)),
        (("How long does it keep in the fridge?", "Could I freeze the leftovers?"),
         ("Three to four days in the fridge, or around three months in the freezer in an airtight box.",)),
        (("What if I don't have an oven?",),
         ("Use a heavy pot with a lid on the stovetop over low heat; check it every ten minutes.",)),
        (("How many people does that feed?",),
         ("About four, or two with leftovers for lunch.", "Four normal portions; double it for a crowd.")),
        (("Any drink you'd pair with it?",),
         ("A crisp white or a sparkling water with lime would cut through the richness.",)),
        (("Thanks, that sounds great.", "Perfect, I'll try that."),
         ("Enjoy! Let me know how it turns out.", "Have fun cooking!")),
    )),
    Topic("travel planning", (
        (("I'm thinking about a long weekend in {city} sometime. What should I not miss?",
          "If I ever get to {city}, what are the must-sees?",
          "Could you sketch a {nights}-night itinerary for {city}? Just brainstorming for now."),
         ("Start with the old town on foot, save an afternoon for the main museum, and book one good dinner in "
          "advance. Markets are best in the morning.",
          "Day one: the historic centre and a viewpoint at sunset. Day two: a museum and a food tour. Keep the last "
          "morning free for wandering.")),
        (("Is {city} or {city2} better for a first trip in {month}?",),
         ("In {month}, {city2} is usually milder, while {city} has more going on. It depends on whether you want "
          "events or quiet.", "Both are great; {city} is easier to get around without a car.")),
        (("How much should I budget for {nights} nights in {city}, roughly?",),
         ("Around {budget} dollars covers a mid-range hotel, food and a few tickets, excluding flights.",)),
        (("What's the best way to get from the airport into {city}?",),
         ("The train is usually fastest and cheapest; taxis make sense late at night or with lots of luggage.",)),
    ), (
        (("Do I need to book museums in advance?", "Should I reserve tickets ahead?"),
         ("For the popular ones, yes, especially on weekends. Smaller ones you can just walk into.",)),
        (("Any day trips worth doing from there?",),
         ("A coastal town or a wine region an hour away makes a good day trip; trains run often.",)),
        (("What should I pack for {month}?",),
         ("Layers, a light rain jacket and comfortable walking shoes.", "Light clothes and one warm layer.")),
        (("Is it walkable or should I rent a car?",),
         ("The centre is very walkable; a car only helps for the countryside.",)),
        (("Which neighbourhood is nice to stay in?",),
         ("Stay near the old town for atmosphere, or a residential area nearby for quieter nights and cheaper "
          "food.",)),
        (("How many days is enough, honestly?",),
         ("Three full days covers the highlights without rushing.", "Four days if you want a day trip too.")),
        (("Good tip, thanks.", "Okay, I'll think about it."),
         ("Happy planning!", "No rush, it's a lovely place whenever you go.")),
    )),
    Topic("coding help", (
        (("I'm getting {bug} in my {lang} code and I can't figure out where it comes from.",
          "Can you help me debug {bug} in a {lang} service?",
          "My {lang} project started showing {bug} after I upgraded {lib}."),
         ("Let's narrow it down. Can you share the stack trace and the smallest snippet that reproduces it?",
          "If it started after an upgrade, pin the old version to confirm, then bisect the change.")),
        (("How do I structure a small {lang} project that uses {lib}?",),
         ("Keep the domain logic in plain modules, put {lib}-specific code at the edges, and add tests from day "
          "one.",)),
        (("What's the idiomatic way to read a large CSV file in {lang}?",),
         ("Stream it row by row instead of loading it all; most standard libraries have a streaming reader.",)),
        (("Should I use {lib} or write it myself for this?",),
         ("Use {lib} unless you have a very specific need; it's well tested and the maintenance cost is lower.",)),
    ), (
        (("Here's the trace: it fails inside the retry loop.", "It only happens under load."),
         ("That smells like shared state. Make the retry idempotent and add a lock or move the state per request.",
          "Under load it's often timing. Add logging around the loop and run it with more workers locally.")),
        (("How would I write a test for that?",),
         ("Write a test that triggers the failing path directly; use a fake clock or a fixture to make it "
          "deterministic.",)),
        (("Is there a linter that would have caught this?",),
         ("A type checker plus a linter in CI would catch many of these; enable the stricter rules gradually.",)),
        (("What about performance, will this be slow?",),
         ("Measure before optimising; a profiler will show whether it's I/O or CPU bound.",)),
        (("Should I add type hints everywhere?",),
         ("Start with public functions and data models; that gives most of the benefit.",)),
        (("That fixed it, thanks!", "Okay, it works now."),
         ("Great! Consider adding a regression test so it stays fixed.", "Nice, glad it's sorted.")),
    )),
    Topic("books", (
        (("Have you read {book} by {author}? What did you think?",
          "I keep seeing {book} recommended. Is it worth it?"),
         ("It's widely loved for its atmosphere and characters. The pacing is slow at first but it pays off.",
          "Many readers find it rewarding; the second half is where it really comes together.")),
        (("Can you recommend something in {genre} that isn't too long?",
          "I want to get into {genre}. Where should I start?"),
         ("{book2} by {author2} is a good entry point: accessible, and not too long.",
          "Try {book2}; it's a classic of the genre and easy to get into.")),
        (("My book club is choosing between {book} and {book2}. Thoughts?",),
         ("{book} sparks more discussion; {book2} is the lighter read. It depends on the group's mood.",)),
    ), (
        (("Is the audiobook version any good?",),
         ("The narration is often praised; it works well on walks or commutes.",)),
        (("What else is similar?", "Anything similar you'd suggest?"),
         ("If you like that, {book2} by {author2} has a similar feel.",)),
        (("How long would it take to read?",),
         ("At an hour a day, about two weeks.", "Most people finish it in a couple of weeks.")),
        (("Are there any good discussion questions for it?",),
         ("Ask how the narrator's view changes, which character the group trusts least, and what the ending "
          "means.",)),
        (("I'm not sure it's for me, though.",),
         ("Give it fifty pages; if it hasn't grabbed you by then, it's fine to move on.",)),
        (("Thanks for the suggestions.",), ("Happy reading!", "Enjoy!")),
    )),
    Topic("fitness", (
        (("Can you put together a beginner routine with {ex} and {ex2}?",
          "I want a simple workout plan for three days a week.",
          "What's a good warm-up before {ex}?"),
         ("Try {sets} sets of {reps} {ex}, then {ex2}, resting a minute between sets, three times a week.",
          "Five minutes of easy cardio, some mobility for hips and shoulders, then two light sets before working "
          "sets.")),
        (("My knees hurt a bit after {ex}. Should I stop?",),
         ("Reduce the load and check your form; if the pain persists, see a physiotherapist.",)),
        (("How do I build up to running {km} kilometres?",),
         ("Increase your weekly distance by about ten percent and alternate run and walk intervals for "
          "{weeks} weeks.",)),
    ), (
        (("How much protein do I actually need?",),
         ("Around 1.6 grams per kilogram of body weight a day is a common target for strength training.",)),
        (("How long until I see results?",),
         ("Usually {weeks} weeks of consistent training before changes are obvious.",)),
        (("Should I stretch before or after?",),
         ("Dynamic moves before, static stretching after, when the muscles are warm.",)),
        (("What if I miss a week?",),
         ("Just pick up where you left off, maybe slightly lighter for the first session.",)),
        (("Is it okay to train on consecutive days?",),
         ("Yes, if you alternate muscle groups or keep one of the days easy.",)),
        (("Great, I'll give it a try.",), ("Good luck, and listen to your body!",)),
    )),
    Topic("shopping", (
        (("I'm comparing {prod} and {prod2}. Which is better value around {price} dollars?",
          "Do you think {prod} is worth {price} dollars?",
          "I'm trying to decide whether to get {prod} from {store}."),
         ("At that price, look at build quality and warranty first; reviews matter more than specs.",
          "It can be, if you'll use it daily. Check the return policy before buying.")),
        (("What should I look for when buying {prod}?",),
         ("Durability, warranty length, and whether spare parts are available.",)),
        (("Is it better to wait for a sale on {prod}?",),
         ("Prices often drop {pct} percent during seasonal sales, so waiting can pay off if you're not in a "
          "hurry.",)),
    ), (
        (("Are refurbished ones okay?",),
         ("Usually yes, if they come with a warranty from the manufacturer or a reputable seller.",)),
        (("Which brand is most reliable?",),
         ("Reliability varies by model more than by brand; look at long-term reviews.",)),
        (("Should I buy online or in a store?",),
         ("In a store you can try it; online usually has better prices and easier comparison.",)),
        (("What about the extended warranty they offer?",),
         ("Usually not worth it for cheaper items; the standard warranty covers most early failures.",)),
        (("Okay, I'll think it over.", "Thanks, that helps."), ("Sure, take your time.", "Happy shopping!")),
    )),
    Topic("small talk", (
        (("Tell me something interesting today.", "I'm bored, tell me a fun fact.",
          "Do you know any good trivia about octopuses?"),
         ("Octopuses have three hearts and blue blood, and each arm can act somewhat independently.",
          "Honey never spoils; archaeologists have found edible honey in ancient tombs.")),
        (("My friend {name} keeps recommending {film}. Should I watch it?",),
         ("It's well regarded; if you like thoughtful stories, it's worth an evening.",)),
        (("It's been such a long week.", "I'm so tired today."),
         ("That sounds draining. Anything fun planned to recharge?", "Sorry to hear. Be kind to yourself.")),
    ), (
        (("What's a good way to relax in the evening?",),
         ("A short walk, a screen-free hour and a book work for many people.",)),
        (("Any podcast recommendations?",),
         ("History and science podcasts are great for commutes; try one episode of a few and see what sticks.",)),
        (("Do you have a favourite season?",),
         ("I don't experience seasons, but many people love autumn for the colours and the cooler air.",)),
        (("Ha, that's funny.", "Interesting!"), ("Glad you liked it!", "Right? Nature is wonderful.")),
        (("{name2} says I should take up a hobby. Ideas?",),
         ("Pottery, climbing, photography or a choir: pick something with a weekly group so it sticks.",)),
    )),
    Topic("gardening", (
        (("My {plant} looks droopy. What am I doing wrong?", "How often should I water {plant}?"),
         ("Check the soil: if it's soggy, water less; if dry an inch down, water deeply. Good drainage matters.",
          "Most do best when the top of the soil dries between waterings.")),
        (("When is the right time to plant {plant}?",),
         ("After the last frost, when nights stay above ten degrees.",)),
    ), (
        (("Should I use fertiliser?",),
         ("A balanced fertiliser every few weeks in the growing season is enough.",)),
        (("What about pests?",),
         ("Rinse aphids off with water, or use a mild soap spray; encourage ladybirds.",)),
        (("Does it need full sun?",), ("Bright light, but not harsh afternoon sun, suits most.",)),
        (("Thanks, I'll try that.",), ("Good luck with it!",)),
    )),
    Topic("films and series", (
        (("Is {film} worth watching?", "I just watched {film}. What did people think of the ending?"),
         ("Critics liked it a lot; the ending divides people, which is part of the fun.",
          "It's beautifully made; if you like slower films, you'll enjoy it.")),
        (("Can you suggest a film for a rainy {day} night?",),
         ("{film} is a good pick: absorbing, and not too heavy.",)),
    ), (
        (("Who directed it?",), ("It's by a well-known director praised for visual storytelling.",)),
        (("Anything similar?",), ("If you liked it, look at other films by the same director.",)),
        (("Is it suitable for kids?",), ("It's better for teens and adults.",)),
        (("Cool, thanks.",), ("Enjoy the film!",)),
    )),
    Topic("home repair", (
        (("How do I fix {repair}?", "I've got {repair}. Can I fix it myself?"),
         ("Often yes. Turn off the supply first, find the worn part, and replace it; it's usually cheap.",
          "Start by identifying the cause; most fixes need only basic tools.")),
        (("Do I need a professional for {repair}?",),
         ("For simple cases no, but call one if water or electricity is involved and you're unsure.",)),
    ), (
        (("What tools will I need?",), ("A screwdriver set, an adjustable wrench and some plumber's tape.",)),
        (("How long will it take?",), ("Under an hour for most people.",)),
        (("What if it doesn't work?",), ("Then the part might be different; take the old one to the store.",)),
        (("Thanks, wish me luck.",), ("Good luck! Take photos before you take things apart.",)),
    )),
)  # fmt: skip

PREFIXES = ("", "", "", "", "Okay. ", "Hmm, ", "Thanks! ", "Got it. ", "Right. ", "Cool. ", "One more thing: ",
            "Also, ")  # fmt: skip
ASIDES = ("By the way, ", "Oh, unrelated, but ", "Side note: ", "", "", "Funny timing, ", "Anyway, ",
          "Not that it matters, but ")  # fmt: skip


def _fill(r: random.Random, options: Sequence[str], slots: dict[str, str]) -> str:
    return r.choice(options).format(**slots)


def _host_turns(r: random.Random, exchanges: int, long: random.Random | None = None, topic: Topic | None = None,
                s: dict[str, str] | None = None) -> tuple[str, list[Turn]]:  # fmt: skip
    """A topical conversation of ``exchanges`` user/assistant pairs (``topic`` and slots ``s`` drawn if not given);
    with ``long``, each reply expanded by ``bench.memory_replies.expand`` from that stream."""
    topic = topic or r.choice(TOPICS)
    s = s or _slots(r)
    used: set[str] = set()  # shape="long": the sentence templates this conversation's replies took

    def reply(options: Sequence[str], name: str = topic.name) -> str:
        short = _fill(r, options, s)
        if long is None:
            return short
        return expand(long, name, short, s, used)

    (u0, a0) = r.choice(topic.openers)
    turns = [Turn("user", _fill(r, u0, s)), Turn("assistant", reply(a0))]
    picked = r.sample(topic.followups, min(exchanges - 1, len(topic.followups)))
    closer = topic.followups[-1]  # each topic's last follow-up closes a conversation: it goes last
    picked = [x for x in picked if x is not closer] + [x for x in picked if x is closer]
    for u, a in picked:
        turns += [Turn("user", _join(r.choice(PREFIXES), _fill(r, u, s))), Turn("assistant", reply(a))]
    return topic.name, turns


_NAMES = set(FIRST)


def _join(prefix: str, text: str) -> str:
    """``prefix`` + ``text``, the first letter lower-cased after a comma or colon unless it starts a name or "I"."""
    first = text.split(" ", 1)[0].strip(",.!?'s")
    if prefix.endswith((", ", ": ")) and first not in _NAMES and not text.startswith(("I ", "I'")):
        text = text[:1].lower() + text[1:]
    return prefix + text


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _with_fact(r: random.Random, statement: str, ack: str, first_turn: float = 0.2,
               long: random.Random | None = None) -> tuple[str, list[Turn]]:  # fmt: skip
    """A host conversation with ``statement`` said in one user turn (the first with probability ``first_turn``)
    and acknowledged at the start of the next assistant turn."""
    topic, turns = _host_turns(r, r.randint(2, 6), long)
    users = list(range(0, len(turns), 2))
    at = 0 if r.random() < first_turn else r.choice(users[1:] or users)
    aside = r.choice(ASIDES)
    sentence = (aside + statement) if aside else _cap(statement)
    sentence = sentence.rstrip(".!") + "."
    old = turns[at].content
    turns[at] = Turn("user", f"{sentence} {old}" if at == 0 or r.random() < 0.5 else f"{old} {sentence}")
    if ack:
        turns[at + 1] = Turn("assistant", f"{ack} {turns[at + 1].content}")
    return topic, turns


# --- personal facts --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Single:
    """A fact said once: ``say`` and ``ack`` templates take {v}; ``ask`` are question paraphrases."""

    values: tuple[str, ...]
    say: tuple[str, ...]
    ask: tuple[str, ...]
    ack: tuple[str, ...] = ("Good to know.", "Noted.", "")


SINGLES: dict[str, Single] = {
    "sister": Single(FIRST, (
        "my sister {v} is coming to stay with me for a few days", "I was on the phone with my sister {v} all evening",
        "my younger sister {v} just got engaged", "{v}, my sister, thinks I work too much"),
        ("What is my sister's name?", "What's my sister called?", "Remind me, what's my sister's name?"),
        ("How lovely that {v} is visiting.", "Say hi to {v}!", "")),
    "allergy": Single(("peanuts", "shellfish", "sesame", "kiwi", "tree nuts", "bee stings", "penicillin", "latex"), (
        "I'm allergic to {v}, so keep that in mind", "just so you know, I have a {v} allergy",
        "I found out last year that I'm allergic to {v}"),
        ("What am I allergic to?", "Do I have any allergies?", "Which allergy do I have?"),
        ("Thanks for telling me, I'll keep that in mind.", "Good to know, I'll keep it in mind.", "")),
    "instrument": Single(("cello", "trumpet", "ukulele", "violin", "bass guitar", "saxophone", "drums", "flute"), (
        "I've been playing the {v} since high school", "I have a {v} lesson on Thursday evening",
        "I practised the {v} for two hours last night"),
        ("Which instrument do I play?", "What musical instrument do I play?"),
        ("Nice, the {v} is a great instrument.", "")),
    "degree": Single(("marine biology", "civil engineering", "art history", "economics", "linguistics", "nursing",
                      "philosophy", "chemistry"), (
        "I studied {v} at university", "back when I was doing my degree in {v} I lived on instant noodles",
        "my {v} degree was a long time ago now"),
        ("What did I study at university?", "What was my degree in?", "What subject did I major in?"),
        ("Ha, {v} is a fascinating field.", "")),
    "hometown": Single(("Ghent", "Valparaíso", "Tromsø", "Bergamo", "Asheville", "Galway", "Kuching", "Aarhus",
                        "Mendoza", "Trieste"), (
        "I grew up in {v}", "back in {v}, where I grew up, we made this every winter",
        "my parents still live in {v}, the town I grew up in"),
        ("Where did I grow up?", "What's my hometown?", "Which town am I originally from?"),
        ("{v} sounds like a lovely place to grow up.", "")),
    "language": Single(("Japanese", "Portuguese", "Korean", "Italian", "Turkish", "Dutch", "Swahili", "Greek"), (
        "I've started learning {v} on my lunch breaks", "my {v} class meets on Tuesday evenings",
        "I'm trying to learn {v} before my next holiday"),
        ("Which language am I learning?", "What language have I been studying?"),
        ("Good luck with the {v}!", "")),
    "partner": Single(FIRST, (
        "my partner {v} is the better cook in our house", "{v}, my partner, wants to repaint the living room",
        "my partner {v} and I are celebrating our anniversary soon"),
        ("What's my partner's name?", "What is the name of my partner?"),
        ("That's sweet.", "")),
    "commute": Single(("by bike", "by tram", "on foot", "by ferry", "by train", "by scooter"), (
        "I commute to work {v} most days", "I usually get to the office {v}, it takes about half an hour"),
        ("How do I usually get to work?", "How do I commute?"),
        ("That's a nice way to start the day.", "")),
    "diet": Single(("vegetarian", "vegan", "pescatarian", "gluten-free"), (
        "I've been {v} for about two years now", "I eat {v}, so I'll need to adapt recipes"),
        ("What kind of diet do I follow?", "Do I follow a particular diet?"),
        ("Noted, I'll keep suggestions {v}.", "")),
    "board_game": Single(("Catan", "Carcassonne", "Wingspan", "Ticket to Ride", "Azul", "Pandemic", "Codenames"), (
        "my favourite board game is {v}, we play it every Friday", "our game nights always end with {v}, my favourite"),
        ("What's my favourite board game?", "Which board game do I like best?"),
        ("{v} is a classic!", "")),
    "birthday": Single(MONTHS, (
        "my birthday is in {v}, so I'm already planning a small party", "since my birthday's in {v}, I get a day off"),
        ("When is my birthday?", "Which month is my birthday in?"),
        ("Happy early birthday!", "")),
    "team": Single(("Benfica", "Celtic", "Ajax", "Boca Juniors", "the Boston Celtics", "the Chicago Cubs",
                    "Borussia Dortmund", "Napoli"), (
        "I've supported {v} since I was a kid", "I was watching {v} lose again last night, as a lifelong fan"),
        ("Which team do I support?", "What sports team am I a fan of?"),
        ("Fingers crossed for {v}!", "")),
}  # fmt: skip


@dataclass(frozen=True)
class Update:
    """A value that changes: ``old`` templates say the first one, ``new`` the second ({v}, and {old} may appear)."""

    values: tuple[str, ...]
    old: tuple[str, ...]
    new: tuple[str, ...]
    ask: tuple[str, ...]  # the current value
    ask_at: tuple[str, ...]  # the value in {month}


UPDATES: dict[str, Update] = {
    "residence": Update(CITIES, (
        "I just signed the lease on a flat in {v}", "we've finally settled into our new place in {v}",
        "I moved to {v} a couple of weeks ago and I'm still unpacking"), (
        "we finally moved to {v} last week", "the move from {old} to {v} went fine, boxes everywhere though",
        "I'm living in {v} now, I left {old} at the end of last month"),
        ("Where do I live?", "Which city am I living in these days?", "Where am I based at the moment?"),
        ("Where was I living in {month}?", "Which city did I live in back in {month}?")),
    "employer": Update(("Northwind", "Brightwave Labs", "Halcyon Health", "Ferro Logistics", "Bluefin Analytics",
                        "Corvid Games", "Lumen Bank", "Tessera Studio", "Orchard Robotics", "Keel Energy"), (
        "things at {v}, where I work, have been hectic this month", "I've been at {v} for a few years now",
        "my manager at {v} asked me to lead a new project"), (
        "I started my new job at {v} on Monday", "I accepted the offer from {v}, first day was yesterday",
        "I left {old} and joined {v} this month"),
        ("Where do I work?", "Which company am I working for these days?", "Who is my employer now?"),
        ("Who was I working for in {month}?", "Which company did I work at in {month}?")),
    "cafe": Update(("Café Lume", "The Daily Grind", "Bean & Leaf", "Kettle House", "Little Roastery",
                    "Morning Ritual", "The Copper Cup", "Sunday Beans"), (
        "my go-to café is {v}, I'm there most mornings", "I always get my flat white at {v}"), (
        "I've switched to {v}, it's my new favourite spot for coffee", "I don't go to {old} anymore, {v} is my place "
        "now"),
        ("What's my favourite café?", "Where do I like to get my coffee?"),
        ("Which café was my favourite in {month}?",)),
    "car": Update(("a Toyota Corolla", "a Skoda Octavia", "a Kia Niro", "a Volvo V60", "a Honda Civic",
                   "a Tesla Model 3", "a Renault Zoe", "a Mazda 3"), (
        "I drive {v}, it's old but reliable", "my car, {v}, needs new tyres"), (
        "I sold the old car and now drive {v}", "I picked up my new car yesterday, {v}"),
        ("What car do I drive?", "What car do I have now?"),
        ("What car did I drive in {month}?",)),
    "show": Update(("Severance", "The Bear", "Slow Horses", "Shogun", "Dark", "Succession", "Fleabag", "Andor"), (
        "I'm completely hooked on {v} right now", "my favourite show at the moment is {v}"), (
        "I've moved on to {v}, it's my new favourite show", "forget {old}, I'm obsessed with {v} now"),
        ("What's my favourite TV show at the moment?", "Which series am I into these days?"),
        ("What show was I into in {month}?",)),
    "sport": Update(("bouldering", "rowing", "tennis", "swimming", "yoga", "cycling", "boxing", "pilates"), (
        "my main sport is {v}, I go three times a week", "I do {v} most weekends"), (
        "I've given up {old} and switched to {v}", "I'm doing {v} now instead, I love it"),
        ("What sport do I do these days?", "Which sport am I practising now?"),
        ("What sport was I doing in {month}?",)),
}  # fmt: skip


@dataclass(frozen=True)
class Multi:
    """One item per session; ``items`` draws one (value, slots) pair; ``ask`` = (template, "count" | "list")."""

    say: tuple[str, ...]
    ask: tuple[tuple[str, str], ...]
    items: Callable[[random.Random], tuple[str, dict[str, str]]]


PET_NAMES = ("Biscuit", "Mochi", "Pepper", "Juno", "Olive", "Ziggy", "Nala", "Pickle", "Bruno", "Luna", "Waffles",
             "Clementine")  # fmt: skip
SPECIES = ("beagle", "tabby cat", "parrot", "rabbit", "corgi", "guinea pig", "black cat", "labrador", "tortoise")
BANDS = ("Arcade Fire", "Khruangbin", "Radiohead", "Fleetwood Mac tribute band", "Hozier", "Bonobo", "Portishead",
         "The National", "Björk", "Vampire Weekend")  # fmt: skip

MULTIS: dict[str, Multi] = {
    "pets": Multi((
        "we adopted a {species} named {v} this weekend", "meet {v}, our new {species}",
        "{v}, the {species} we just brought home, chewed through a cable"),
        (("How many pets do I have?", "count"), ("How many pets do I have now?", "count"),
         ("What are the names of my pets?", "list")),
        lambda r: (lambda n: (n, {"species": r.choice(SPECIES)}))(r.choice(PET_NAMES))),
    "trips": Multi((
        "I just got back from {v}, the trip was amazing", "we spent four days in {v} last week",
        "I'm back from a short trip to {v}, still tired"),
        (("Which cities have I visited in the last few months?", "list"), ("Where have I travelled recently?", "list"),
         ("How many trips have I taken lately?", "count")),
        lambda r: (r.choice(CITIES), {})),
    "books": Multi((
        "I finished {v} last night", "I just finished reading {v}, loved the ending",
        "{v} took me ages but I finally finished it"),
        (("Which books have I finished recently?", "list"), ("How many books have I finished lately?", "count")),
        lambda r: (r.choice(BOOKS)[0], {})),
    "races": Multi((
        "I ran the {v} 10K on Sunday", "I did the {v} half marathon at the weekend, my legs are dead",
        "the {v} fun run was this morning and I beat my time"),
        (("How many races have I run this year?", "count"), ("Which races have I done this year?", "list")),
        lambda r: (r.choice(CITIES), {})),
    "concerts": Multi((
        "I saw {v} live on Friday, what a show", "we went to the {v} concert last night",
        "{v} played a great set at the festival at the weekend"),
        (("Which concerts have I been to recently?", "list"), ("How many concerts have I gone to lately?", "count")),
        lambda r: (r.choice(BANDS), {})),
}  # fmt: skip


@dataclass(frozen=True)
class Weekend:
    """Something done at a weekend; asked "last weekend" from the next Tuesday to Thursday."""

    values: tuple[str, ...]
    say: tuple[str, ...]
    ask: tuple[str, ...]


WEEKENDS: dict[str, Weekend] = {
    "purchase": Weekend(("a standing desk", "a pair of hiking boots", "an espresso machine", "a robot vacuum",
                         "a road bike", "a sewing machine", "an air fryer", "a telescope", "a kayak", "a drone"), (
        "I bought {v} today", "I finally ordered {v} this morning", "I treated myself to {v} today"),
        ("What did I buy last weekend?", "What was the thing I bought last weekend?")),
    "outing": Weekend(("a pottery workshop", "the botanical garden", "a jazz brunch", "an escape room",
                       "the science museum", "a wine tasting", "a cooking class", "the flea market"), (
        "I went to {v} today with friends", "spent the afternoon at {v}, really fun"),
        ("What did I do last weekend?", "Where did I go last weekend?")),
    "visitor": Weekend(FIRST, (
        "my cousin {v} is staying over this weekend", "my old friend {v} came to visit today"),
        ("Who came to visit me last weekend?", "Who stayed with me last weekend?")),
}  # fmt: skip


# --- generation ------------------------------------------------------------------------------------------------


@dataclass
class _Draft:
    when: datetime
    topic: str
    turns: list[Turn]
    role: str
    session: Session | None = None


@dataclass
class _QDraft:
    question: str
    when: datetime
    answer: str
    evidence: list[_Draft]
    category: str
    kind: str
    current: _Draft | None = None
    superseded: str | None = None
    point_in_time: bool = False


@dataclass
class _UserPlan:
    start: datetime
    now: datetime
    r: random.Random
    drafts: list[_Draft] = field(default_factory=list)
    qs: list[_QDraft] = field(default_factory=list)
    taken: set[str] = field(default_factory=set)
    long: random.Random | None = None  # shape="long": the replies' own stream

    def at(self, day: float) -> datetime:
        """A time of day between 07:00 and 23:00 on day ``day`` of the span."""
        d = self.start + timedelta(days=int(day))
        return d.replace(hour=0, minute=0, second=0) + timedelta(minutes=self.r.randint(7 * 60, 23 * 60))

    def pick(self, values: Sequence[str]) -> str:
        v = self.r.choice([x for x in values if x not in self.taken])
        self.taken.add(v)
        return v

    def evidence(self, when: datetime, statement: str, ack: str, role: str = "evidence") -> _Draft:
        topic, turns = _with_fact(self.r, statement, ack, long=self.long)
        d = _Draft(when, topic, turns, role)
        self.drafts.append(d)
        return d

    def after(self, t: datetime, min_days: float = 1, max_days: float = 60) -> datetime:
        hi = min(max_days, (self.now - t).total_seconds() / 86400)
        lo = min(min_days, hi)
        return t + timedelta(days=self.r.uniform(lo, hi))


def _singles(p: _UserPlan, kinds: Sequence[str]) -> None:
    for kind in kinds:
        f = SINGLES[kind]
        v = p.pick(f.values)
        ev = p.evidence(p.at(p.r.uniform(5, 170)), _fill(p.r, f.say, {"v": v}), _fill(p.r, f.ack, {"v": v}))
        p.qs.append(_QDraft(p.r.choice(f.ask), p.after(ev.when, 1, 60), v, [ev], "single-session", kind))


def _months_between(a: datetime, b: datetime) -> list[tuple[int, int]]:
    """(year, month) of the calendar months entirely after ``a`` and before ``b``."""
    out: list[tuple[int, int]] = []
    y, m = a.year, a.month
    while True:
        m, y = (1, y + 1) if m == 12 else (m + 1, y)
        first = datetime(y, m, 1, tzinfo=UTC)
        nxt = datetime(y + 1, 1, 1, tzinfo=UTC) if m == 12 else datetime(y, m + 1, 1, tzinfo=UTC)
        if nxt > b:
            return out
        if first > a:
            out.append((y, m))


def _updates(p: _UserPlan, kinds: Sequence[str], modes: Sequence[set[str]]) -> None:
    """Each kind: the old value early, the new one late; ``modes`` says which questions it gets: "ku" (asked after
    the change), "pit" (between the two), "window" (a month between, asked after)."""
    for kind, want in zip(kinds, modes, strict=True):
        f = UPDATES[kind]
        old, new = p.pick(f.values), p.pick(f.values)
        a = p.evidence(p.at(p.r.uniform(6, 55)), _fill(p.r, f.old, {"v": old}), "")
        b = p.evidence(p.at(p.r.uniform(128, 172)), _fill(p.r, f.new, {"v": new, "old": old}), "")
        if "ku" in want:
            p.qs.append(_QDraft(p.r.choice(f.ask), p.after(b.when, 1, 40), new, [a, b], "knowledge-update", kind,
                                current=b, superseded=old))  # fmt: skip
        if "pit" in want:
            when = a.when + timedelta(days=p.r.uniform(3, (b.when - a.when).days - 3))
            p.qs.append(_QDraft(p.r.choice(f.ask), when, old, [a], "temporal-reasoning", kind, point_in_time=True))
        if "window" in want:
            _, m = p.r.choice(_months_between(a.when, b.when))
            q = p.r.choice(f.ask_at).format(month=MONTHS[m - 1])
            p.qs.append(_QDraft(q, p.after(b.when, 1, 40), old, [a, b], "temporal-reasoning", kind))


def _multis(p: _UserPlan, kinds: Sequence[str], pit: bool) -> None:
    for kind in kinds:
        f = MULTIS[kind]
        n = p.r.choice((2, 3, 3))
        days = sorted(p.r.sample(range(5, 176), n))
        items: list[str] = []
        drafts = []
        for d in days:
            while True:
                v, extra = f.items(p.r)
                if v not in p.taken:
                    break
            p.taken.add(v)
            items.append(v)
            drafts.append(p.evidence(p.at(d), _fill(p.r, f.say, {"v": v, **extra}), ""))
        q, shape = p.r.choice(f.ask)
        upto = n
        when = p.after(drafts[-1].when, 1, 30)
        if pit and n == 3 and (drafts[2].when - drafts[1].when).days >= 4:
            upto = 2
            when = drafts[1].when + timedelta(days=p.r.uniform(1, (drafts[2].when - drafts[1].when).days - 1))
        got = items[:upto]
        answer = f"{upto} ({', '.join(got)})" if shape == "count" else ", ".join(got)
        p.qs.append(_QDraft(q, when, answer, drafts[:upto], "multi-session", kind, point_in_time=upto < n))


def _weekend(p: _UserPlan, kind: str) -> None:
    f = WEEKENDS[kind]
    v, decoy = p.pick(f.values), p.pick(f.values)
    day = p.r.randint(45, 174)
    when = p.at(day)
    while when.weekday() < 5:  # back to a Saturday or Sunday
        when -= timedelta(days=1)
    ev = p.evidence(when, _fill(p.r, f.say, {"v": v}), "")
    p.evidence(when - timedelta(days=7 * p.r.randint(2, 5)), _fill(p.r, f.say, {"v": decoy}), "", role="decoy")
    # asked on the Tuesday to Thursday after
    ask = (when + timedelta(days=(1 - when.weekday()) % 7 + p.r.randint(0, 2))).replace(hour=p.r.randint(8, 21))
    p.qs.append(_QDraft(p.r.choice(f.ask), min(ask, p.now), v, [ev], "temporal-reasoning", kind))


def _abstention(p: _UserPlan, used: set[str]) -> None:
    pool = [k for k in (*SINGLES, *UPDATES) if k not in used]
    kind = p.r.choice(pool)
    ask = SINGLES[kind].ask if kind in SINGLES else UPDATES[kind].ask
    p.qs.append(_QDraft(p.r.choice(ask), p.at(p.r.uniform(90, 181)), UNKNOWN, [], "abstention", kind))


def _assistant(p: _UserPlan) -> None:
    """1-2 single-session-assistant questions: per kind an evidence session (a host conversation on the topic with
    the request and the recommending reply as one of its exchanges) and a decoy on the same subject."""
    assert p.long is not None
    long = p.long

    def convo(s: dict[str, str], topic: Topic, ask: str, reply: str) -> tuple[list[Turn], int]:
        _, turns = _host_turns(p.r, p.r.randint(2, 5), long, topic, s)
        at = 0 if p.r.random() < 0.3 else 2 * p.r.randrange(1, len(turns) // 2)
        pair = [Turn("user", _join(p.r.choice(PREFIXES), ask) if at else ask), Turn("assistant", reply)]
        turns[at : at + (0 if at else 2)] = pair
        return turns, at + 1

    for kind in p.r.sample(sorted(RECALLS), p.r.choice((1, 2, 2))):
        spec = RECALLS[kind]
        topic = next(t for t in TOPICS if t.name == spec.topic)
        while True:  # until its reply alone names the value, and no rival value is named (Recall.clean)
            s = spec.slots(p.r, _slots(p.r))
            turns, at = convo(s, topic, _fill(p.r, spec.ask, s), expand(long, topic.name, _fill(p.r, spec.lead, s), s))
            decoy, _ = convo(s, topic, _fill(p.r, spec.decoy[0], s),
                             expand(long, topic.name, _fill(p.r, spec.decoy[1], s), s))  # fmt: skip
            if spec.clean(s, [(t.role, t.content) for t in turns], at) and spec.clean(
                    s, [(t.role, t.content) for t in decoy], None):  # fmt: skip
                break
        ev = _Draft(p.at(p.r.uniform(5, 150)), topic.name, turns, "evidence")
        p.drafts += [ev, _Draft(p.at(p.r.uniform(0, SPAN_DAYS - 0.5)), topic.name, decoy, "decoy")]
        p.qs.append(_QDraft(_fill(p.r, spec.question, s), p.after(ev.when, 14, 100), s["v"], [ev],
                            "single-session-assistant", kind))  # fmt: skip


def _user(seed: int, index: int, sessions: int, shape: str = "short") -> tuple[User, list[Question]]:
    r = random.Random(f"hivemem-memory-{seed}-{index}")
    uid = f"u-{index:02d}"
    now = (BASE_NOW - timedelta(days=r.randint(0, 30), minutes=r.randint(0, 600))).replace(second=0)
    long = random.Random(f"hivemem-memory-long-{seed}-{index}") if shape == "long" else None
    p = _UserPlan(now - timedelta(days=SPAN_DAYS), now, r, long=long)
    singles = r.sample(sorted(SINGLES), 2)
    updates = r.sample(sorted(UPDATES), 2)
    even = index % 2 == 0
    _singles(p, singles)
    _updates(p, updates, [{"ku", "pit"}, {"pit", "window"} if even else {"ku"}])
    _multis(p, r.sample(sorted(MULTIS), 2 if even else 1), pit=index % 3 == 0)
    _weekend(p, r.choice(sorted(WEEKENDS)))
    _abstention(p, {*singles, *updates})
    if long is not None:
        _assistant(p)
    free = sessions - len(p.drafts)
    if free < 10:
        raise ValueError(f"sessions_per_user={sessions} leaves {free} distractors for {uid}; use at least "
                         f"{len(p.drafts) + 10}")  # fmt: skip
    texts = {"\n".join(t.content for t in d.turns) for d in p.drafts}
    while len(p.drafts) < sessions:
        topic, turns = _host_turns(r, r.randint(2, 6), long)
        text = "\n".join(t.content for t in turns)
        if text in texts:  # the memory refuses the same content twice
            continue
        texts.add(text)
        p.drafts.append(_Draft(p.at(r.uniform(0, SPAN_DAYS - 0.5)), topic, turns, "distractor"))
    p.drafts.sort(key=lambda d: d.when)
    for a, b in zip(p.drafts, p.drafts[1:], strict=False):  # distinct, increasing times
        if b.when <= a.when:
            b.when = a.when + timedelta(minutes=1)
    out = []
    for i, d in enumerate(p.drafts):
        d.session = Session(f"{uid}-s{i:03d}", uid, iso(d.when), d.turns, d.role, d.topic)
        out.append(d.session)
    qs = []
    for j, q in enumerate(p.qs):
        ids = [e.session.session_id for e in q.evidence if e.session]
        qs.append(Question(f"{uid}-q{j:02d}", uid, q.question, iso(q.when), q.answer, ids, q.category,
                           q.current.session.session_id if q.current and q.current.session else None,
                           q.superseded, q.point_in_time, q.kind))  # fmt: skip
    return User(uid, iso(now), out), qs


def generate(seed: int = 7, users: int = 30, sessions_per_user: int = 40, shape: str = "short") -> Corpus:
    """The corpus: ``users`` users with ``sessions_per_user`` sessions each and about 9 questions per user;
    ``shape="long"``: LongMemEval-sized assistant replies and the single-session-assistant questions."""
    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {', '.join(SHAPES)}, not {shape!r}")
    made = [_user(seed, i, sessions_per_user, shape) for i in range(users)]
    source = "synthetic" if shape == "short" else f"synthetic-{shape}"
    return Corpus(seed, [u for u, _ in made], [q for _, qs in made for q in qs], source)


# --- LongMemEval ---------------------------------------------------------------------------------------------

_LME_CATEGORY = {"single-session-user": "single-session", "single-session-assistant": "single-session-assistant",
                 "single-session-preference": "single-session", "multi-session": "multi-session",
                 "knowledge-update": "knowledge-update", "temporal-reasoning": "temporal-reasoning"}  # fmt: skip


def _lme_date(s: str) -> str:
    """LongMemEval's "2023/05/20 (Sat) 02:21" as ISO 8601 UTC."""
    day, _, rest = s.partition(" (")
    hm = rest.partition(") ")[2] or "00:00"
    return iso(datetime.strptime(f"{day} {hm}", "%Y/%m/%d %H:%M").replace(tzinfo=UTC))


def _lme_question_date(s: str) -> str:
    """A LongMemEval question's date as the last minute of its day. The benchmark's generator draws every date's
    time of day at random (``get_random_same_day_timestamps`` in its ``data/custom_history/
    sample_haystack_and_timestamp.py``), the question's too, so 76 of the S file's 499 questions are stamped
    earlier in the day than sessions of their own haystack, 44 of them before evidence sessions (LongMemEval issue
    #8). Asked at that minute, a memory that keeps the future out can never show that evidence; its day is what the
    data means."""
    day = datetime.strptime(s.partition(" (")[0], "%Y/%m/%d").replace(tzinfo=UTC)
    return iso(day + timedelta(days=1, minutes=-1))


def lme_draw(ids: list[str], n: int, skip: int = 0) -> set[str]:
    """``n`` of LongMemEval's question ids drawn by a fixed hash: the ids in the order of their SHA-256, from the
    ``skip``-th on. The same file gives the same draw on every machine, and ``skip`` gives a draw disjoint from an
    earlier one (choose on ``--sample 100``, report on ``--sample 100 --sample-skip 100``)."""
    ordered = sorted(ids, key=lambda q: hashlib.sha256(q.encode()).hexdigest())
    return set(ordered[skip : skip + n])


def from_longmemeval(path: str | Path, limit: int | None = None, sample: int | None = None,
                     sample_skip: int = 0) -> Corpus:  # fmt: skip
    """The public LongMemEval JSON (a list of questions, each with its own haystack) as a ``Corpus``: one user per
    question (``lme-<question_id>``), abstention for ids ending in ``_abs``, each question asked at the end of its
    day (``_lme_question_date``). A knowledge-update question with two evidence sessions or more has its latest one as
    ``current_session_id`` (LongMemEval asks for the value the last of them tells; no ``superseded_value``: its hits
    are labelled by session, ``bench.memory_metrics``). ``limit``: the file's first N questions; ``sample``: N drawn
    by ``lme_draw`` (after ``sample_skip``), in the file's order."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))[:limit]
    if sample is not None:
        drawn = lme_draw([str(item["question_id"]) for item in data], sample, sample_skip)
        data = [item for item in data if str(item["question_id"]) in drawn]
    users, questions = [], []
    for item in data:
        qid = str(item["question_id"])
        uid = f"lme-{qid}"
        sessions = []
        for sid, date, turns in zip(item["haystack_session_ids"], item["haystack_dates"], item["haystack_sessions"],
                                    strict=True):  # fmt: skip
            kept = [Turn(t["role"], t["content"]) for t in turns if t.get("content")]
            if kept:
                sessions.append(Session(f"{uid}-{sid}", uid, _lme_date(date), kept))
        sessions.sort(key=lambda s: s.occurred_at)
        ids = {s.session_id for s in sessions}
        abstain = qid.endswith("_abs")
        evidence = [] if abstain else [f"{uid}-{e}" for e in item.get("answer_session_ids", []) if f"{uid}-{e}" in ids]
        for s in sessions:
            s.role = "evidence" if s.session_id in evidence else "distractor"
        asked = _lme_question_date(item["question_date"])
        users.append(User(uid, sessions[-1].occurred_at if sessions else asked, sessions))
        category = "abstention" if abstain else _LME_CATEGORY.get(item["question_type"], "single-session")
        told = [s for s in sessions if s.session_id in evidence]  # in time order; the last tells the current value
        current = told[-1].session_id if category == "knowledge-update" and len(told) > 1 else None
        questions.append(Question(qid, uid, str(item["question"]), asked,
                                  UNKNOWN if abstain else str(item["answer"]), evidence, category,
                                  current_session_id=current, fact_kind=str(item["question_type"])))  # fmt: skip
    return Corpus(0, users, questions, source=f"longmemeval:{Path(path).name}")


if __name__ == "__main__":
    c = generate()
    print(json.dumps(c.stats(), indent=1))

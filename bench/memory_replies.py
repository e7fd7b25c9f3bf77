"""LongMemEval-shaped assistant replies for ``bench.memory_corpus`` (``generate(shape="long")``).

In LongMemEval (ShareGPT/UltraChat-style chats) an assistant reply is several paragraphs, often with a numbered or
bulleted list, 800-2,500 characters full of named things (places, dishes, books, products, tools, tips). ``expand``
turns a corpus' one-sentence reply into such an answer: the short reply stays first, then paragraphs and/or a list
composed from the topic's ``BANKS`` of sentences with slots, filled from the session's slots (``_slots``) and fresh
picks from the vocabulary here and in ``bench.memory_vocabulary``, never a value the session already uses. Texts carry
no e-mails, phone numbers or long digit runs (the PII regex stage would redact them).

``RECALLS`` are the ``single-session-assistant`` questions: in an evidence session one long reply recommends one
specific thing (``lead`` names it as ``{v}``) in answer to ``ask``; weeks later ``question`` refers back to it by
the conversation's subject, in other words than the reply's; ``decoy`` is an exchange on the same subject for a
near-miss session without the value. ``pick`` draws the value (and any subject slot it needs) into the slots.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bench.memory_vocabulary import BOOKS, CITIES, DISHES, EXERCISES, HERBS, INGREDIENTS, LIBS, PLANTS, SHOWS_FILMS

NEIGHBOURHOODS = ("the Old Quarter", "the Harbour district", "Riverside", "the Cathedral quarter", "Castle Hill",
                  "the Arts district", "the University quarter", "the Market district", "the Latin quarter",
                  "the Docklands", "the Garden suburb", "Old Town North", "the Canal district", "Hillcrest",
                  "the Fishermen's quarter")  # fmt: skip
HOTELS = ("Hotel Aurora", "the Linden House", "Casa Marlo", "the Granary Hotel", "Hotel Nordlys", "the Quayside Inn",
          "Pension Adler", "the Foundry Hotel", "Hotel Miravento", "the Ivy Lodge", "the Saltworks Hotel",
          "Hotel Bellamar")  # fmt: skip
DAY_TRIPS = ("the hill villages", "the wine valley", "the coastal cliffs", "the lakes to the north",
             "the old monastery", "the island by ferry", "the national park", "the thermal baths", "the castle ruins",
             "the fishing harbour down the coast")  # fmt: skip
LOCAL_FOODS = ("grilled sardines", "custard tarts", "street dumplings", "smoked fish sandwiches", "slow-cooked stews",
               "flatbreads from the wood oven", "fresh ceviche", "cinnamon buns", "spiced lamb skewers",
               "cheese-filled pastries", "seafood rice", "churros with chocolate")  # fmt: skip
BOOSTERS = ("smoked paprika", "white miso", "Greek yoghurt", "pomegranate molasses", "tahini", "preserved lemon",
            "brown butter", "anchovy paste", "toasted sesame oil", "crème fraîche")  # fmt: skip
SIDES = ("a fennel and orange salad", "garlic flatbread", "buttered green beans", "a cucumber raita",
         "roast new potatoes", "a sharp slaw", "herbed couscous", "charred broccolini")  # fmt: skip
TOOLS = ("a basin wrench", "an oscillating multi-tool", "a plumber's snake", "a stud finder", "a caulking gun",
         "a cordless drill", "a putty knife", "a torpedo level", "a pipe cutter", "a rubber mallet", "a voltage tester",
         "a utility knife")  # fmt: skip
DEV_TOOLS = ("git bisect", "a sampling profiler", "a heap snapshot", "ThreadSanitizer", "property-based tests",
             "a flame graph", "structured logging", "conditional breakpoints", "a fake clock", "pre-commit hooks",
             "a strict linter", "request tracing")  # fmt: skip
STRETCHES = ("the cat-cow flow", "the McGill big three", "a pigeon pose sequence", "the couch stretch",
             "thread-the-needle", "the world's greatest stretch", "a child's pose and sphinx routine",
             "the figure-four stretch", "a hip flexor lunge series", "dead hangs")  # fmt: skip
AREAS = ("lower back", "upper back", "neck", "left hip", "right shoulder", "left hamstring")
MODELS = ("the Sonora Pro", "the Kestrel Air", "the Halden Classic", "the Vireo Max", "the Nimbus Lite",
          "the Atlas Core", "the Marlin Studio", "the Fjord Plus", "the Lumo Edge", "the Tern Compact", "the Brio Home",
          "the Osprey Flex")  # fmt: skip
VARIETIES: dict[str, tuple[str, tuple[str, ...]]] = {  # plant (as in PLANTS): (singular, varieties)
    "tomatoes": ("tomato", ("Sungold", "San Marzano", "Black Krim", "Gardener's Delight", "Brandywine")),
    "basil": ("basil", ("Genovese", "Thai basil", "Purple Ruffles", "lemon basil")),
    "strawberries": ("strawberry", ("Albion", "Mara des Bois", "Honeoye", "Cambridge Favourite")),
    "lavender": ("lavender", ("Hidcote", "Munstead", "Grosso", "Phenomenal")),
    "peppers": ("pepper", ("Padrón", "Hungarian Wax", "Shishito", "Corno di Toro")),
}
SF, HF, LF = "science fiction", "historical fiction", "literary fiction"
BOOK_GENRES = dict(zip((b[0] for b in BOOKS), (SF, "fantasy", LF, LF, SF, LF, HF, SF, "mysteries", HF, HF, SF, SF, LF,
                                               "fantasy", LF, LF, SF, "mysteries", SF, LF, SF, LF, "thrillers"),
                       strict=True))  # the genre the single-session-assistant book is asked for  # fmt: skip
PESTS = ("aphids", "spider mites", "slugs", "whitefly", "fungus gnats", "mealybugs")
PODCASTS = ("The Long Walk", "Small Hours", "Field Notes Radio", "Deep Time", "The Curious Kitchen", "Slow News")


@dataclass(frozen=True)
class Bank:
    prose: tuple[str, ...]  # sentences for paragraphs
    heads: tuple[str, ...]  # a list's introduction
    items: tuple[str, ...]  # list items, "Title: description" or a sentence


BANKS: dict[str, Bank] = {
    "recipes": Bank((
        "The most important step is browning the {ing} properly: don't crowd the pan, and let it sit until it "
        "releases on its own.",
        "If you have {booster} in the cupboard, a small spoonful stirred in at the end adds a lot of depth.",
        "Toast any dried spices in the oil for thirty seconds before adding liquid; it makes a surprising difference.",
        "For a weeknight version, you can cut the simmering time to {minutes} minutes and still get a good result.",
        "Season in stages rather than all at the end, and taste every time you add something.",
        "Fresh {herb} is best added off the heat, while hardier herbs like {herb2} can go in early.",
        "If you're cooking for guests, {side} on the side makes it feel like a proper meal without much extra work.",
        "A squeeze of lemon or a splash of vinegar right before serving will wake up all the flavours.",
        "If you want it lighter, swap half the {ing} for {ing3} and add a little extra stock.",
        "A heavy pan that holds heat well, like cast iron or an enamelled pot, gives the best browning.",
        "Don't skip resting it for a few minutes before serving; the sauce thickens and the flavours settle.",
        "You can prep the vegetables and the sauce base the day before and just finish it in the evening.",
        "If {name} doesn't like heat, keep the chilli on the table so everyone can add their own.",
        "Street food stalls in {city3} do something similar with {food}, which is worth trying if you ever visit.",
        "Once you're comfortable with it, {dish2} uses almost the same technique and is a nice next step."), (
        "Here's a simple way to approach it:", "A few tips that make a real difference:",
        "If it helps, here's the order I'd do things in:"), (
        "Prep first: chop everything before you turn on the heat, so nothing burns while you look for the {ing}.",
        "Brown the {ing}: medium-high heat, in batches, until deeply golden.",
        "Build the base: onion, garlic and a pinch of salt, cooked slowly for about ten minutes.",
        "Add depth: a spoonful of {booster} or a splash of wine, scraping up the browned bits.",
        "Simmer: cover and cook gently for {minutes} minutes, stirring now and then.",
        "Finish: fresh {herb}, a squeeze of lemon and a final taste for salt.", "Serve: with {side}, or just bread.",
        "Make ahead: it keeps three days in the fridge and reheats well with a splash of water.",
        "Swap: {ing3} works well in place of the {ing2} if that's what you have.",
        "Garnish: toasted seeds or a drizzle of good olive oil add texture at the end.")),
    "travel planning": Bank((
        "{hood} is lovely for a morning walk, with small bakeries and a market that gets going early.",
        "In the evening, head to {hood2}, where the streets fill up and the bars spill onto the pavements.",
        "Don't leave without trying {food}; the best ones come from the small places with a queue of locals.",
        "If you have a spare day, a trip out to {trip} is easy to arrange and makes a nice change of pace.",
        "Many visitors also like {hood3} for its street art and independent shops.",
        "Book dinner in advance for Friday and Saturday nights; the popular places fill up quickly.",
        "A transport day pass usually pays for itself if you take more than three rides a day.",
        "For something quieter, the view over {hood2} at sunset is hard to beat.",
        "{month} is generally a pleasant time to visit, though it's worth packing a light rain layer.",
        "Around {budget} dollars for the whole stay is realistic if you mix nice dinners with cheap lunches.",
        "Some travellers pair {city} with {city3} on the same trip, since the connections are easy.",
        "If you like food markets, go early, bring cash, and try {food2} while you're there.",
        "Museums are often free or discounted one afternoon a week, so check before you go.",
        "Staying a little outside the centre saves money, but check the last tram or bus times.",
        "If you'd rather be near the water, {hotel} gets good reviews, though it books up early."), (
        "Here's a rough plan you could adapt:", "A few highlights I'd prioritise:",
        "Some ideas for your days there:"), (
        "{hood}: wander the side streets in the morning and stop for coffee and a pastry.",
        "{hood2}: best in the late afternoon and evening, with plenty of places for dinner.",
        "{hood3}: good for independent shops, galleries and a slower pace.",
        "A day trip to {trip}: easy by train or bus, and a nice contrast to the city.",
        "Food to try: {food}, and {food2} from a market stall.",
        "The main museum: go right when it opens to avoid the crowds.",
        "A sunset viewpoint: bring something to drink and arrive a little early.",
        "Getting around: walk the centre and use trams or buses for longer hops.",
        "A food tour: a fun way to learn about {food} from locals.",
        "A slow last morning: leave time for a final coffee before heading to the station.")),
    "coding help": Bank((
        "Before changing anything, write a small test that reproduces the problem; it tells you when it's fixed.",
        "{devtool} is often the quickest way to see what's happening rather than guessing.",
        "In {lang}, it's worth checking how {lib} handles this by default, because the defaults changed recently.",
        "If the failure is intermittent, log the inputs and the timing around it; patterns appear after a few runs.",
        "Keep the fix small and focused, and put any refactoring in a separate change so reviews stay easy.",
        "Adding type hints to the functions involved often reveals the mismatch straight away.",
        "If you're comparing libraries, {lib2} is a reasonable alternative, though it has a different philosophy.",
        "Check whether anything shares state between requests or threads; that's a common source of {bug}.",
        "Pin your dependency versions so a transitive upgrade can't change behaviour underneath you.",
        "{devtool2} in CI is a cheap way to catch this class of problem before it reaches production.",
        "Reading the library's changelog for the last couple of releases can save hours of debugging.",
        "Once it's fixed, add a short comment explaining why the code looks the way it does.",
        "For performance questions, measure with realistic data; micro-benchmarks can be misleading.",
        "If you can, pair with a colleague for twenty minutes: explaining the problem out loud often solves it."), (
        "Here's how I'd approach it step by step:", "A checklist that usually helps:",
        "Some things to try, roughly in order:"), (
        "Reproduce it: find the smallest input that triggers it reliably.",
        "Isolate it: disable parts of the code until the problem disappears.",
        "Inspect: use {devtool} to see the state at the moment it fails.",
        "Check versions: compare the {lib} version in production with the one on your machine.",
        "Read the trace bottom-up: the first frame in your own code is usually the interesting one.",
        "Write the test: make it fail first, then fix the code.",
        "Automate: add {devtool2} to your pipeline so it stays fixed.",
        "Simplify: if the code is hard to test, that's a sign it should be split up.",
        "Document: a short note in the README helps the next person who hits it.",
        "Review: ask someone to look at the change with fresh eyes.")),
    "books": Bank((
        "{book3} by {author3} is often mentioned alongside it, and it's a good next read if you like the style.",
        "It's the kind of book that rewards slow reading; the details in the early chapters matter later on.",
        "Many readers say the audiobook is excellent, which makes it easier to fit in on commutes.",
        "If you enjoy {genre}, keep a short list of authors whose other books you want to try.",
        "Book clubs tend to have lively discussions about the ending and how far to trust the narrator.",
        "Reading a chapter before bed is a nice habit, and short chapters make it easy to stop.",
        "If you find it slow, it's fine to skim the descriptive passages and focus on the characters.",
        "{author2} has a distinctive voice, so if you like one of their books you'll probably enjoy the others.",
        "Libraries often lend e-book versions for free, which is handy for trying something new.",
        "Reading it alongside {book3} makes an interesting comparison, since they handle similar themes differently.",
        "Some people keep a small notebook of favourite lines; it makes the book easier to discuss later.",
        "Translations vary in quality, so if it wasn't written in English, check which one is recommended.",
        "If you want something lighter afterwards, a short collection of essays or stories is a good palate "
        "cleanser."), (
        "A few books along the same lines:", "If you want more like this, you could try:",
        "Some options depending on your mood:"), (
        "{book3} by {author3}: absorbing, with memorable characters.",
        "{book2} by {author2}: a little lighter, but very well written.",
        "Something in {genre}: recent prize shortlists are a good source of ideas.",
        "A re-read of an old favourite: it's surprising how different it feels years later.",
        "An audiobook: good for walks, commutes and chores.",
        "A short novel: under two hundred pages, perfect for a weekend.",
        "A non-fiction pick: a popular history or science book as a change of pace.",
        "A classic you've always meant to read: pair it with a good introduction.",
        "A book club choice: something with a divisive ending makes for the best discussion.",
        "A local author: bookshops in {city} often have a shelf of them.")),
    "fitness": Bank((
        "Consistency matters far more than intensity in the first {weeks} weeks, so keep the sessions manageable.",
        "{stretch} after training helps a lot with stiffness, especially in the {area}.",
        "Warm up with five minutes of easy cardio and a couple of light sets before the main work.",
        "Aim for {sets} sets of {reps} on {ex3}, resting about a minute between sets.",
        "Sleep and protein do most of the recovery work, so don't neglect either.",
        "If something hurts sharply rather than just feeling hard, stop and check your form.",
        "Progress slowly: add a little weight or a couple of reps each week, not both at once.",
        "A training log, even a simple note on your phone, makes it much easier to see progress.",
        "On rest days, a walk or an easy bike ride keeps you moving without adding fatigue.",
        "Many people find mornings easier to stick to, but the best time is the one you'll actually keep.",
        "Mixing {ex} with {ex3} gives you a good balance between strength and conditioning.",
        "If you're short on time, a circuit of three exercises done back to back is still very effective.",
        "Drink water before you feel thirsty, especially if you train in a warm room.",
        "A physiotherapist can check your movement if your {area} keeps bothering you."), (
        "Here's a simple weekly structure:", "A few tips to get the most out of it:",
        "Something like this would work well:"), (
        "Day one: {ex}, {sets} sets of {reps}, then some core work.",
        "Day two: an easy run or a brisk walk of about {km} kilometres.",
        "Day three: {ex3} and {ex2}, with a longer warm-up.", "Mobility: ten minutes of {stretch} in the evening.",
        "Recovery: at least one full rest day, and keep an eye on sleep.",
        "Nutrition: a source of protein with every meal.", "Warm-up: easy cardio, then leg swings and arm circles.",
        "Cool-down: {stretch2} and some slow breathing.", "Progression: add a little load every week or two.",
        "Check-in: after {weeks} weeks, review what's working and adjust.")),
    "shopping": Bank((
        "{model} gets consistently good reviews in this price range, though it's not the cheapest option.",
        "{model2} is worth a look too; it trades a few features for a lower price.",
        "Check the return policy before buying, especially if you're ordering online.",
        "Long-term reviews, written after six months or more, are much more useful than first impressions.",
        "Prices often drop by around {pct} percent in seasonal sales, so timing can matter.",
        "Shops like {store} sometimes price-match, so it's worth asking if you find it cheaper elsewhere.",
        "A longer warranty is a good sign that the manufacturer trusts the product.",
        "Think about how often you'll use it: for daily use, paying a bit more for quality usually pays off.",
        "Spare parts and repairability matter more than most people expect.",
        "If you can, try it in a shop first, then compare prices online.",
        "Refurbished units from the manufacturer are often as good as new and noticeably cheaper.",
        "Avoid paying extra for features you're unlikely to use; they add complexity rather than value.",
        "Reading the one-star reviews is useful: they show you the most common ways it fails."), (
        "A few things to compare before you decide:", "Here's what I'd check:", "Some options worth considering:"), (
        "{model}: solid build and a good warranty, a safe choice.",
        "{model2}: cheaper, with a few compromises on materials.",
        "Build quality: look at hinges, seams and buttons, where things usually break first.",
        "Warranty: two years or more is a good sign.", "Reviews: favour long-term ones over launch-day impressions.",
        "Price history: check whether it regularly goes on sale.",
        "Return policy: make sure you can send it back if it doesn't suit you.",
        "Accessories: factor in anything you'll need to buy separately.",
        "Where to buy: {store}, or the manufacturer's own shop.",
        "Second-hand: a good option if you can test it first.")),
    "small talk": Bank((
        "Octopuses can taste with their arms, which sounds strange until you think about how they hunt.",
        "A good way to unwind is a short walk without your phone; even twenty minutes helps.",
        "If you like podcasts, {podcast} is a gentle one with short episodes about curious corners of history.",
        "Some people keep a small list of things that went well each day; it's a surprisingly effective habit.",
        "{film2} is a nice pick for a quiet evening if you haven't seen it.",
        "Bananas are technically berries, while strawberries, botanically speaking, are not.",
        "Sea otters hold hands while they sleep so they don't drift apart.",
        "A weekly activity with other people, like a choir or a climbing group, is one of the easiest ways to make a "
        "hobby stick.",
        "Cooking something new once a week is a fun way to break the routine.",
        "If you're tired, an early night and a slow morning can do more than any productivity trick.",
        "A trip to {city3} has been on a lot of people's lists lately, mostly for the food and the walking.",
        "Wombats produce cube-shaped droppings, which scientists only fully explained a few years ago.",
        "Some of the best conversations start with a simple question about what someone is curious about."), (
        "A few ideas, if you're looking for something to do:", "Here are some things you could try:",
        "Some ways to recharge this week:"), (
        "Listen to an episode of {podcast}.", "Watch {film2} with a bowl of popcorn.", "Cook {dish2} from scratch.",
        "Take a long walk in a part of town you don't know.", "Call a friend you haven't spoken to in a while.",
        "Try a pottery or climbing taster session.", "Start {book3}, a book many people love.",
        "Visit a museum on its free afternoon.", "Plan a day trip, even if it's just a small town nearby.",
        "Go to bed an hour earlier for a few nights.")),
    "gardening": Bank((
        "Most container plants prefer deep, infrequent watering to a little every day.",
        "Good drainage matters more than anything: a pot without holes will cause trouble sooner or later.",
        "{pest} are a common problem; a strong spray of water or a mild soap solution usually keeps them down.",
        "If you grow {plant2} as well, keep it slightly apart, since it likes different conditions.",
        "A balanced liquid feed every couple of weeks in the growing season is plenty.",
        "Morning sun and afternoon shade suits most plants on a hot balcony.",
        "{variety} is a popular variety if you want something reliable and productive.",
        "Repot when roots start circling the bottom of the pot, ideally in spring.",
        "Mulching the top of the soil helps it hold moisture during hot spells.",
        "Check the leaves regularly: yellowing lower leaves often mean too much water.",
        "Companion planting, such as {herb} near vegetables, can help keep pests away.",
        "Pinch out the growing tips to encourage bushier plants.",
        "In colder months, move pots closer to the wall, where it's a little warmer."), (
        "A few things that will help:", "Here's a simple care routine:", "Some tips for the season:"), (
        "Water: deeply, when the top of the soil feels dry.",
        "Light: bright, but sheltered from the harshest afternoon sun.",
        "Soil: a good peat-free compost mixed with some grit.",
        "Feeding: a balanced liquid feed every two weeks from spring.", "Pests: watch for {pest} under the leaves.",
        "Pruning: remove dead or yellowing leaves as they appear.", "Companions: {herb} or marigolds nearby.",
        "Pots: terracotta breathes better, plastic holds water longer.",
        "Varieties: {variety} is a good one to start with.", "Winter: less water and a sheltered spot.")),
    "films and series": Bank((
        "{film2} has a similar feel and is worth watching if you liked the pacing.",
        "A lot of people say it's better on a second viewing, once you know where it's going.",
        "The soundtrack is a big part of the experience, so it's worth watching with good speakers or headphones.",
        "If you enjoy that director's style, {film3} is another one critics often bring up in the same breath.",
        "It's a good pick for a {day} night, though maybe not if you're very tired: it asks for your attention.",
        "Critics praised the cinematography and the lead performances in particular.",
        "For something lighter afterwards, an animated film or a comedy makes a nice contrast.",
        "Streaming services rotate their catalogues, so check where it's available this month.",
        "Watching it with friends makes for a good discussion afterwards.",
        "If you liked the themes, there are several good documentaries that explore similar ideas.",
        "Reading a short interview with the director afterwards can add a lot to the experience.",
        "It won several awards, but it's the smaller, quieter moments that people remember."), (
        "A few films along the same lines:", "If you want more like it, you could try:",
        "Some picks for your next movie night:"), (
        "{film2}: beautifully shot, with a strong central performance.",
        "{film3}: a bit different in tone, but similar in spirit.",
        "A documentary on the same subject, for the real story behind it.", "An older classic by the same director.",
        "A recent festival favourite with a small cast.", "An animated film, for something lighter.",
        "A mini-series, if you want to spend longer in a similar world.",
        "A foreign-language film with good subtitles.",
        "A comfort rewatch of something you already love.", "A double bill: two films that share a theme.")),
    "home repair": Bank((
        "Turn off the water or the power at the source before you start, and check it really is off.",
        "Take photos at every step as you take things apart; they make reassembly much easier.",
        "Having {tool} on hand makes this job easier, and it's useful for plenty of other fixes around the house.",
        "Most hardware stores will match a replacement part if you bring the old one with you.",
        "Work slowly and don't force anything: old fittings can crack if you overtighten them.",
        "If you need to seal anything, a good silicone sealant and {tool2} will give a neat finish.",
        "Keep a small box of spare washers, screws and plugs; it saves a lot of trips to the shop.",
        "If the problem comes back within a few weeks, the root cause is probably elsewhere.",
        "Call a professional if there's any sign of water near electrics or the wiring looks old.",
        "A cheap headlamp is surprisingly useful when you're working under sinks or behind furniture.",
        "Give any filler or sealant the full drying time before using the area again.",
        "Online video guides are useful, but check they match the model of fitting you have.",
        "Budget an extra hour: small jobs have a way of growing once you open things up."), (
        "Here's how I'd tackle it:", "A step-by-step outline:", "What you'll need, roughly:"), (
        "Safety first: isolate the water or power and test it.",
        "Diagnose: find exactly where the problem comes from before buying parts.",
        "Tools: {tool}, {tool2}, a screwdriver set and a torch.",
        "Parts: take the old part to the store so you get an exact match.",
        "Disassemble: go slowly and photograph each step.",
        "Replace: fit the new part hand-tight, then a quarter turn more.", "Seal: a neat bead of sealant where needed.",
        "Test: turn things back on and check for leaks or wobbles over a day.",
        "Tidy up: clear the area and dispose of old parts properly.",
        "Know when to stop: if something cracks or sparks, call a professional.")),
}  # fmt: skip
BRIDGES = ("", "", "", "Here's a bit more detail.", "A few more thoughts, in case they help.",
           "It's worth adding a couple of things.", "Some context that might be useful:")  # fmt: skip
CLOSERS = ("Let me know how it goes, and feel free to come back with more questions.",
           "If you tell me a bit more about your situation, I can tailor these suggestions further.",
           "I hope this helps. Enjoy!", "Feel free to ask if anything here isn't clear.",
           "Good luck, and have fun with it!", "Happy to help with the next step whenever you're ready.")  # fmt: skip


def _extras(r: random.Random, taken: set[str]) -> dict[str, str]:
    """Fresh names for one reply, none of them a value the session's slots already hold."""

    def pick(pool: Sequence[str], n: int) -> list[str]:
        return r.sample([x for x in pool if x not in taken], n)

    hood, hood2, hood3 = pick(NEIGHBOURHOODS, 3)
    trip, food, food2, booster, side = *pick(DAY_TRIPS, 1), *pick(LOCAL_FOODS, 2), *pick(BOOSTERS, 1), *pick(SIDES, 1)
    book3, author3 = r.choice([b for b in BOOKS if b[0] not in taken])
    tool, tool2 = pick(TOOLS, 2)
    devtool, devtool2 = pick(DEV_TOOLS, 2)
    stretch, stretch2 = pick(STRETCHES, 2)
    model, model2 = pick(MODELS, 2)
    film2, film3 = pick(SHOWS_FILMS, 2)
    plant = next((k for k in VARIETIES if k in taken), None)  # the session's plant, if it has varieties
    varieties = VARIETIES[plant][1] if plant else tuple(v for _, vs in VARIETIES.values() for v in vs)
    return {
        "hood": hood, "hood2": hood2, "hood3": hood3, "trip": trip, "food": food, "food2": food2,
        "hotel": pick(HOTELS, 1)[0], "booster": booster, "side": side, "book3": book3, "author3": author3,
        "tool": tool, "tool2": tool2, "devtool": devtool, "devtool2": devtool2, "stretch": stretch,
        "stretch2": stretch2, "model": model, "model2": model2, "film2": film2, "film3": film3,
        "variety": pick(varieties, 1)[0], "pest": r.choice(PESTS), "podcast": r.choice(PODCASTS),
        "area": r.choice(AREAS), "lib2": pick(LIBS, 1)[0], "city3": pick(CITIES, 1)[0], "dish2": pick(DISHES, 1)[0],
        "ing3": pick(INGREDIENTS, 1)[0], "herb2": pick(HERBS, 1)[0], "plant2": pick(PLANTS, 1)[0],
        "ex3": pick(EXERCISES, 1)[0],
    }  # fmt: skip


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _fresh_first(r: random.Random, templates: Sequence[str], used: set[str]) -> list[str]:
    """``templates`` shuffled, those not in ``used`` (by this conversation's earlier replies) first."""
    fresh, stale = [t for t in templates if t not in used], [t for t in templates if t in used]
    return r.sample(fresh, len(fresh)) + r.sample(stale, len(stale))


def _list(r: random.Random, bank: Bank, slots: dict[str, str], used: set[str]) -> str:
    picked = _fresh_first(r, bank.items, used)[: r.randint(3, 7)]
    used.update(picked)
    items = [t.format(**slots) for t in picked]
    bold = r.random() < 0.5
    marks = [f"{i}. " for i in range(1, len(items) + 1)] if r.random() < 0.6 else [r.choice(("- ", "* "))] * len(items)
    lines = []
    for mark, item in zip(marks, items, strict=True):
        title, sep, rest = item.partition(": ")
        lines.append(f"{mark}**{_cap(title)}**: {rest}" if bold and sep else f"{mark}{_cap(item)}")
    return r.choice(bank.heads) + "\n" + "\n".join(lines)


def expand(r: random.Random, topic: str, first: str, slots: dict[str, str], used: set[str] | None = None) -> str:
    """``first`` (a short reply, or a recommendation) grown into a long answer on ``topic``: it stays the first
    sentence(s), then paragraphs of 2-4 sentences and/or a list of 3-7 items, maybe a closing line. ``used``: the
    templates the conversation's earlier replies took (updated), taken last."""
    bank = BANKS[topic]
    used = set() if used is None else used
    s = {**_extras(r, set(slots.values())), **slots}
    skip = [f"{{{k}}}" for k in slots.get("_skip", "").split()]
    bank = Bank(*(tuple(t for t in ts if not any(k in t for k in skip)) for ts in (bank.prose, bank.heads, bank.items)))
    pool = _fresh_first(r, bank.prose, used)

    def para(n: int) -> str:
        took = pool[:n]
        del pool[:n]
        used.update(took)
        return " ".join(_cap(t.format(**s)) for t in took)

    style = r.choices(("prose", "list", "mixed"), weights=(3, 3, 4))[0]
    lead = " ".join(x for x in (first, r.choice(BRIDGES), para(r.randint(1, 2))) if x)
    blocks = [lead]
    if style == "prose":
        blocks += [para(r.randint(2, 4)) for _ in range(r.randint(2, 5))]
    elif style == "list":
        blocks += [para(r.randint(2, 3))]
        blocks.append(_list(r, bank, s, used))
        blocks += [para(r.randint(1, 3))] if r.random() < 0.5 else []
    else:
        blocks += [para(r.randint(2, 4)) for _ in range(r.randint(1, 3))]
        blocks.append(_list(r, bank, s, used))
        blocks += [para(r.randint(2, 3))] if r.random() < 0.6 else []
    if r.random() < 0.6:
        blocks.append(r.choice(CLOSERS))
    return "\n\n".join(b for b in blocks if b)


# --- single-session-assistant: one reply recommends one thing, asked about weeks later ----------------------------


@dataclass(frozen=True)
class Recall:
    topic: str  # a TOPICS name: the host conversation
    ask: tuple[str, ...]  # the user's request (names the subject, never the value)
    lead: tuple[str, ...]  # the reply's first sentence, naming {v}
    question: tuple[str, ...]  # weeks later, by the subject
    decoy: tuple[tuple[str, ...], tuple[str, ...]]  # (user, short reply) on the same subject, without the value
    values: tuple[str, ...]  # what the reply can recommend
    rivals: tuple[str, ...] = ()  # slots naming other ``values``: their sentences are left out of both sessions
    pick: Callable[[random.Random, dict[str, str]], dict[str, str]] | None = None  # sets "v" (and the subject)

    def slots(self, r: random.Random, s: dict[str, str]) -> dict[str, str]:
        """``s`` with the value ("v"), any subject slot it needs, and the rival slots to skip ("_skip")."""
        s = self.pick(r, s) if self.pick else {**s, "v": r.choice([x for x in self.values if x not in s.values()])}
        return {**s, "_skip": " ".join(self.rivals)}

    def clean(self, s: dict[str, str], turns: Sequence[tuple[str, str]], at: int | None) -> bool:
        """(role, content) ``turns`` name the value in turn ``at`` only (None: nowhere) and, with ``rivals``, no
        other of the ``values`` except those the user brought up."""
        v = s["v"].casefold()
        user = " ".join(c for role, c in turns if role == "user").casefold()
        others = [x.casefold() for x in self.values] if self.rivals else []
        others = [x for x in others if x != v and x not in user]
        return all((v in c.casefold()) == (i == at) and not any(x in c.casefold() for x in others)
                   for i, (_, c) in enumerate(turns))  # fmt: skip


def _stretch(r: random.Random, s: dict[str, str]) -> dict[str, str]:
    return {**s, "area": r.choice(AREAS), "v": r.choice(STRETCHES)}


def _book(r: random.Random, s: dict[str, str]) -> dict[str, str]:
    title, author = r.choice([b for b in BOOKS if b[0] not in s.values()])
    return {**s, "v": title, "vauthor": author, "genre": BOOK_GENRES[title]}


def _variety(r: random.Random, s: dict[str, str]) -> dict[str, str]:
    plant = r.choice(sorted(VARIETIES))
    crop, values = VARIETIES[plant]
    return {**s, "plant": plant, "crop": crop, "v": r.choice(values)}


RECALLS: dict[str, Recall] = {
    "stay": Recall("travel planning", (
        "I'm finally booking that trip to {city}. Which part of town should I look for a room in? I'd like to walk "
        "everywhere.",
        "Where's a good area to book accommodation in {city} for a first visit? I don't want to spend half the day "
        "on buses."), (
        "For {city} I'd book something in {v}: it's central and walkable, with plenty of small places to eat, and "
        "most of the sights are a short stroll away.",
        "My first choice would be {v}. It's lively during the day but quiet at night, the trams run late, and "
        "there's good coffee on every corner."), (
        "In our chat about my trip to {city}, which neighbourhood did you suggest I stay in?",
        "When we were planning {city}, what part of town did you say I should sleep in?"), (
        ("What's the food scene like in {city}? I'm still deciding whether to go.",),
        ("It's one of the best reasons to go: markets in the morning, long lunches and plenty of small bars.",)),
        NEIGHBOURHOODS),
    "hotel": Recall("travel planning", (
        "Can you suggest a hotel in {city} close to the train station? Something mid-range, nothing fancy.",
        "I'm arriving in {city} by train late at night. Any hotel within walking distance of the station?"), (
        "I'd look at {v}: it's a few minutes' walk from the platforms, the rooms are simple but quiet, and the "
        "breakfast is decent.",
        "A good bet is {v}. It's right by the station, reasonably priced, and the staff are used to late arrivals."), (
        "You recommended a hotel near the station when I was planning {city}. What was it called?",
        "What was the name of the place by the station in {city} that you suggested?"), (
        ("Is it worth paying more to stay right in the centre of {city}?",),
        ("Usually yes for a short trip: you save time and taxi fares, and evenings are easier.",)),
        HOTELS, ("hotel",)),
    "book": Recall("books", (
        "I want something in {genre} to take on holiday, nothing too heavy. What would you pick?",
        "Going away for a week and I'd love a {genre} book for the trip. Any suggestion?"), (
        "I'd take {v} by {vauthor}: it's absorbing without being heavy, and the chapters are short enough to read "
        "in bursts.",
        "My pick would be {v} by {vauthor}. It's immersive, well paced, and easy to pick up after a day out."), (
        "What was the book you recommended when I asked for some {genre} for my holiday?",
        "Remind me which {genre} title you said I should take away with me?"), (
        ("I've been reading a lot of {genre} lately and I'm a bit burnt out on it. Is that normal?",),
        ("Completely normal; switching genres for a book or two usually brings the appetite back.",)),
        tuple(b[0] for b in BOOKS), ("book2", "book3"), _book),
    "booster": Recall("recipes", (
        "My {dish} tastes fine but a bit one-note. How do I make it more interesting?",
        "Every time I make {dish} it's just okay. Is there one thing that would lift it?"), (
        "The trick I'd use is a spoonful of {v}: stir it in near the end and it adds a savoury depth that makes the "
        "whole dish taste more finished.",
        "Try adding {v}. A small amount rounds out the flavours and gives the {dish} the depth it's missing."), (
        "Remind me, what did you say I should add to liven up my {dish}?",
        "What was the ingredient you suggested to make my {dish} less boring?"), (
        ("How do I keep {dish} from drying out when I reheat it?",),
        ("Add a splash of water or stock, cover it, and reheat gently rather than blasting it.",)),
        BOOSTERS, ("booster",)),
    "stretch": Recall("fitness", (
        "My {area} has been really stiff since I started doing {ex}. Anything I can do in the evenings?",
        "I sit all day and my {area} is killing me. Is there a short routine I could do before bed?"), (
        "I'd do {v} every evening: about ten minutes, slow and controlled, and it targets exactly the muscles that "
        "tighten up when you sit a lot.",
        "Try {v}. It's gentle, needs no equipment, and most people feel a difference in their {area} within a week "
        "or two."), (
        "Can you remind me which stretching routine you suggested for my {area}?",
        "What was that stretch you told me to do for my stiff {area}?"), (
        ("I pulled something in my {area} lifting a box. Should I keep training?",),
        ("Rest it for a few days, keep moving gently, and see a physio if it isn't improving within a week.",)),
        STRETCHES, ("stretch", "stretch2"), _stretch),
    "model": Recall("shopping", (
        "I need {prod} for under {price} dollars. Which one would you actually buy?",
        "Shopping for {prod} again, budget around {price} dollars. Is there a specific one you'd pick?"), (
        "At that budget I'd get {v}: it's well built, the reviews are consistently good, and it tends to last for "
        "years.",
        "I'd go for {v}. It hits the sweet spot between price and quality, and the warranty is better than most."), (
        "When I was shopping around for {prod}, which model did you tell me to get?",
        "Which one did you recommend when I was after {prod} on a budget?"), (
        ("Is {prod} something I should buy new, or is second-hand fine?",),
        ("Second-hand can be great value if you can test it first and it hasn't been heavily used.",)),
        MODELS, ("model", "model2")),
    "tool": Recall("home repair", (
        "I'm about to tackle {repair} this weekend. Is there one tool that'll make my life easier?",
        "Any tool worth buying before I deal with {repair}?"), (
        "Get {v}: it makes the awkward part of the job much easier and costs less than a call-out.",
        "The one thing I'd buy is {v}. It saves a lot of frustration and you'll use it again for other jobs."), (
        "What was the tool you said would make fixing {repair} easier?",
        "Which tool did you suggest I pick up for {repair}?"), (
        ("Is {repair} something that gets worse if I leave it for a month?",),
        ("It can, mostly because small leaks or gaps grow; better to fix it sooner while it's simple.",)),
        TOOLS, ("tool", "tool2")),
    "debug": Recall("coding help", (
        "I still can't find where {bug} comes from in my {lang} service. What's the most effective way to hunt it "
        "down?",
        "Tracking down {bug} in {lang} is eating my whole week. How would you approach it?"), (
        "I'd reach for {v} first: it turns a vague hunt into a systematic one and usually points at the culprit "
        "quickly.",
        "Use {v}. It's the fastest way to narrow down where the problem starts instead of guessing."), (
        "What did you tell me to use to track down {bug} in my {lang} code?",
        "Which technique did you suggest for hunting down {bug} in my {lang} service?"), (
        ("How do I explain {bug} to my manager without getting too technical?",),
        ("Describe the symptom, the impact on users and the plan, and skip the internals unless asked.",)),
        DEV_TOOLS, ("devtool", "devtool2")),
    "film": Recall("films and series", (
        "I loved {film}. What should I watch next that has a similar feel?",
        "Just finished {film} and I want more of that mood. Recommendations?"), (
        "Then I'd queue up {v} next: it has the same quiet intensity and it stays with you for days.",
        "You'd probably love {v}. Similar mood, wonderful performances, and a great ending."), (
        "What film did you suggest after I told you how much I liked {film}?",
        "Which movie did you recommend as a follow-up to {film}?"), (
        ("My friends keep quoting {film}. What's the big deal about it?",),
        ("It's loved for its mood and performances; it's one of those films people like to rewatch.",)),
        SHOWS_FILMS, ("film2", "film3")),
    "variety": Recall("gardening", (
        "I want to grow {plant} on my balcony this year. Which kind should I buy?",
        "Thinking of planting {plant} in pots on the balcony. Is there a type that does well in containers?"), (
        "For a balcony I'd go for {v}: it's compact, copes well in containers and crops generously.",
        "Look for {v}. It's one of the most reliable choices for pots and it doesn't need much space."), (
        "Which {crop} variety did you recommend for my balcony?",
        "What kind of {crop} did you say I should grow on the balcony?"), (
        ("My {plant} on the balcony looked sad all last summer. Was it the heat?",),
        ("Quite possibly: balconies get hot and dry, so daily watering and some afternoon shade help.",)),
        tuple(v for _, vs in VARIETIES.values() for v in vs), ("variety",), _variety),
}  # fmt: skip

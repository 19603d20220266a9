"""The conversational retrieval corpus: long chit-chat between a person and an assistant over many sessions of
one year, years before it is asked about, and the questions the person would ask later (bench/corpus/conversation/).

    uv run python -m testkit.corpora.make_conversation_corpus

Different in kind from the coding histories of `make_hard_corpus`: no tools, no code, no project vocabulary;
a life told in passing between small talk that reuses the same names (the partner, the sister, weekends,
dinners, trips). Deterministic (seeded). Twelve people, 20 sessions each, a fortnight apart through 2022; every
session holds a handful of small-talk exchanges and some of the facts below, said inside longer messages.
Questions are written from a paraphrase, never from the planted sentence:

- single: one fact said once (a pet's name, an allergy, a favourite novel, a teacher); half of them told as
  news in two turns, the fact in the answer to the assistant's question ("guess what…" / "what did she call
  him?" / "Biscuit."), so the turn that matches the question best is the one before the evidence;
- multi: the answer is spread over two or three sessions (the trips of the year, the hobbies taken up, the
  presents given); the question asks for all of them;
- temporal: one of several like events (concerts, dinners out, visits), picked by the month it happened in
  ("in May", without a year) or relatively ("last month"), asked years later: read in the history's own time;
- inference: knowledge outside the question's words (seasick → "a sailing holiday?", vegetarian → "the
  steakhouse for my birthday?");
- update: something that changed (a job, a home, a gym); the newer one is the answer and must rank above;
- abstention: a question reusing the history's words about something never said (the sister's cat, when she
  has a dog): the right answer is nothing.

Every question is assigned to `tune` or `held_out` (one in three) by a hash of its id, before any tuning.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from testkit.corpora.make_reflect_corpus import Session
from testkit.paths import CORPUS as CORPUS_DIR

OUT = CORPUS_DIR / "conversation"
START = datetime(2022, 1, 8, 19, 0, tzinfo=UTC)
SESSIONS, GAP_DAYS = 20, 14
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]  # fmt: skip

PEOPLE = [
    # (who, partner, pronoun of the partner, sister)
    ("maya", "Jonas", "he", "Hannah"), ("theo", "Clara", "she", "Ines"), ("amara", "Kofi", "he", "Zuri"),
    ("lukas", "Mira", "she", "Greta"), ("sofia", "Mateo", "he", "Lucia"), ("ravi", "Anika", "she", "Priya"),
    ("elena", "Marek", "he", "Katya"), ("owen", "Beth", "she", "Fiona"), ("nadia", "Samir", "he", "Leila"),
    ("jakub", "Ewa", "she", "Marta"), ("chloe", "Arjun", "he", "Emma"), ("felipe", "Rosa", "she", "Carmen"),
]  # fmt: skip

PETS = [("beagle", "Biscuit"), ("corgi", "Waffles"), ("greyhound", "Comet"), ("spaniel", "Pepper"),
        ("labrador", "Juniper"), ("terrier", "Noodle"), ("collie", "Maple"), ("poodle", "Pistachio"),
        ("dachshund", "Pretzel"), ("husky", "Blizzard"), ("whippet", "Dash"), ("bulldog", "Tank")]  # fmt: skip
ALLERGENS = ["cashews", "shellfish", "kiwi", "sesame", "penicillin", "birch pollen", "latex", "mustard", "celery",
             "buckwheat", "lupin", "dust mites"]  # fmt: skip
BOOKS = [("The Left Hand of Darkness", "Ursula K. Le Guin"), ("Piranesi", "Susanna Clarke"),
         ("Station Eleven", "Emily St. John Mandel"), ("The Remains of the Day", "Kazuo Ishiguro"),
         ("A Gentleman in Moscow", "Amor Towles"), ("Klara and the Sun", "Kazuo Ishiguro"),
         ("The Overstory", "Richard Powers"), ("Circe", "Madeline Miller"), ("Middlemarch", "George Eliot"),
         ("Pachinko", "Min Jin Lee"), ("The Name of the Rose", "Umberto Eco"),
         ("Beloved", "Toni Morrison")]  # fmt: skip
INSTRUMENTS = [("cello", "Mrs. Okafor"), ("piano", "Mr. Lindqvist"), ("violin", "Ms. Duarte"),
               ("saxophone", "Mr. Haddad"), ("guitar", "Ms. Moreau"), ("drums", "Mr. Tanaka"),
               ("flute", "Ms. Novak"), ("ukulele", "Mr. Bianchi"), ("harp", "Ms. Achebe"),
               ("trumpet", "Mr. Kowalski"), ("accordion", "Ms. Petrova"), ("banjo", "Mr. Walsh")]  # fmt: skip
CARS = ["Skoda Octavia estate", "Toyota Yaris hybrid", "Volvo V60", "Honda Jazz", "Renault Zoe", "Mazda 3",
        "Kia Niro", "Fiat Panda", "Peugeot 208", "Subaru Forester", "VW Golf", "Nissan Leaf"]  # fmt: skip
COLOURS = ["dark green", "silver", "navy blue", "white", "bright red", "grey", "bronze", "black", "yellow",
           "burgundy", "sky blue", "orange"]  # fmt: skip
RESTAURANTS = [("Osteria Lupa", "Italian"), ("Kin Khao", "Thai"), ("Casa Azul", "Mexican"),
               ("The Copper Pot", "Georgian"), ("Saffron Street", "Persian"), ("Umami Bar", "Japanese"),
               ("Le Petit Zinc", "French"), ("Taverna Milos", "Greek"), ("Dosa Corner", "South Indian"),
               ("Bodega Negra", "Spanish"), ("Pho Hanoi", "Vietnamese"), ("Injera House", "Ethiopian")]  # fmt: skip
CITIES = ["Lisbon", "Edinburgh", "Kraków", "Valencia", "Copenhagen", "Porto", "Ljubljana", "Bologna", "Tallinn",
          "Seville", "Ghent", "Bergen", "Trieste", "Lyon", "Vienna", "Dubrovnik"]  # fmt: skip
HOBBIES = ["bouldering", "pottery", "birdwatching", "salsa dancing", "sourdough baking", "chess",
           "watercolour painting", "open-water swimming", "knitting", "trail running", "woodworking",
           "board games"]  # fmt: skip
GIFTS = ["a vintage record player", "a weekend cooking course", "a hand-made leather notebook",
         "tickets to the opera", "a cashmere scarf", "a telescope", "a framed map of where we met",
         "a fountain pen"]  # fmt: skip
BANDS = ["Arctic Monkeys", "Florence and the Machine", "Khruangbin", "Fleetwood Mac tribute band", "Bonobo",
         "the city's philharmonic", "Rosalía", "Nick Cave"]  # fmt: skip
JOBS = [("a logistics firm", "dispatcher"), ("the city library", "archivist"), ("a design studio", "illustrator"),
        ("a children's hospital", "nurse"), ("an insurance company", "analyst"), ("a bakery chain", "manager"),
        ("the university", "lab technician"), ("a travel agency", "consultant"), ("a vet practice", "receptionist"),
        ("a solar installer", "project coordinator"), ("a museum", "curator"), ("a law firm", "paralegal")]  # fmt: skip
NEIGHBOURHOODS = ["Riverside", "Old Town", "Northfield", "Harbour Quarter", "Elm Park", "Westgate", "Hillcrest",
                  "Canal Side", "Foxley", "Mill Lane", "Southbank", "Abbey Green"]  # fmt: skip
GYMS = [("a climbing gym", "swimming pool"), ("a boxing club", "yoga studio"), ("a CrossFit box", "rowing club"),
        ("a spin studio", "pilates class")]  # fmt: skip

# Knowledge the question's words do not hold: (what is said, the question it answers)
INFERENCE = [
    ("Honestly I get seasick even on the twenty-minute ferry, I spent the whole crossing green.",
     "Would a sailing holiday be a good idea for me?"),
    ("I've been vegetarian since college, so the barbecue was mostly grilled halloumi for me.",
     "Should I book the steakhouse for my birthday dinner?"),
    ("The physio said my knees need a break, so no running at all for a few months.",
     "Can I sign up for a 10k race in the autumn?"),
    ("{partner} really can't stand the cold, {pron} grew up on the coast of Portugal.",
     "Is a ski trip a good present for {partner}?"),
    ("Ever since I fell off that ladder I can't even look down from a balcony.",
     "Would I enjoy a hot-air balloon ride?"),
    ("We're putting every spare penny aside for the deposit on a flat.",
     "Is now a good time for me to buy a new television?"),
    ("Coffee after noon means I'm awake until three, so I switched to decaf in the afternoons.",
     "Should I get an espresso with dessert at tonight's dinner?"),
    ("I'm hopeless with crowds, the festival last summer gave me a proper panic attack.",
     "Would New Year's Eve in Times Square suit me?"),
]  # fmt: skip

SMALL_TALK = [
    ("It's been raining all week, I'm starting to forget what the sun looks like.",
     "That sounds grim. A warm drink and a good film might help the evenings pass."),
    ("Work was a blur today, three meetings back to back and nothing decided.",
     "Days like that are draining. Did you get any time for yourself afterwards?"),
    ("{partner} made a curry tonight and it was far too spicy for me.",
     "A glass of milk or some yoghurt helps more than water with the heat."),
    ("I called {sister} for an hour, we mostly talked about our parents' anniversary plans.",
     "It's lovely that you two stay close. Have you settled on anything for the anniversary?"),
    ("We watched two episodes of that detective series and fell asleep during the third.",
     "Slow-burning detective shows are good for that. Is it worth continuing?"),
    ("My weekend was quiet, mostly laundry and a walk around the park.",
     "Quiet weekends are underrated. Did the walk help you reset?"),
    ("I'm thinking about a trip somewhere warm but I haven't looked at anything yet.",
     "A little sunshine can do wonders. Would you rather a beach or a city?"),
    ("The neighbours had a party until two in the morning, I'm exhausted.",
     "That's rough. Earplugs are a lifesaver on nights like that."),
    ("I tried a new recipe for dinner, a lentil soup, it turned out fine.",
     "Lentil soup is a classic. Did you add anything to brighten it, like lemon?"),
    ("{partner} and I argued about whose turn it was to do the dishes, very grown up of us.",
     "Every household has that argument. A rota can take the heat out of it."),
    ("My phone screen cracked this morning, I dropped it on the stairs.",
     "Annoying! A screen protector next time might save you the repair."),
    ("I finally cleaned out the wardrobe, three bags for the charity shop.",
     "That's a satisfying job. Does it feel lighter in there now?"),
    ("Dinner with friends tonight, nothing special, just pasta at someone's place.",
     "Those easy evenings are often the best ones. Enjoy it."),
    ("I'm a bit tired of my commute, the train was late again.",
     "Delays add up over a week. Do you have a podcast or book for the wait?"),
    ("{sister} sent me photos of her garden, the tomatoes are taking over.",
     "Tomatoes do love to sprawl. Maybe she'll have enough to share."),
    ("We might repaint the living room, {partner} wants a darker colour.",
     "Dark walls can feel cosy. Try a big swatch before committing."),
    ("I spent the afternoon on the balcony reading, it was actually warm for once.",
     "A rare treat. What are you reading at the moment?"),
    ("My manager asked if I'd lead the next project, I said I'd think about it.",
     "That's a vote of confidence. What would make you say yes?"),
    ("I went to the market and came back with far too many vegetables.",
     "Soup or a big tray bake would use them up nicely."),
    ("Can't sleep, my head's full of to-do lists.",
     "Writing the list down before bed can quiet it. Try it tonight."),
    ("We had a long walk by the river with {partner} after dinner.",
     "Evening walks by water are so calming. How was the light?"),
    ("A friend from school got in touch after ten years, it was lovely to catch up.",
     "Reconnecting like that is special. Are you planning to meet?"),
    ("The dog next door barks every time I open the door, I think it hates me.",
     "Maybe a treat or two would win it over."),
    ("I should really call the dentist, I've been putting it off for months.",
     "It's easier once it's booked. Maybe call first thing tomorrow."),
]  # fmt: skip
EVENT_KINDS = {
    "concert": ("We went to see {what} on Saturday, {detail}.", "Which concert did I go to {when}?", BANDS,
                ["the sound was incredible", "we were right at the front", "it rained the whole time",
                 "they played for nearly three hours"]),
    "dinner": ("{partner} took me to {what} for dinner, {detail}.", "Where did we go out to eat {when}?",
               [f"{r} ({c})" for r, c in RESTAURANTS],
               ["the dessert was the highlight", "we waited an hour for a table", "the service was slow but sweet",
                "I'd go back tomorrow"]),
    "visit": ("We drove up to see {what} at the weekend, {detail}.", "Who did we visit {when}?",
              ["my grandmother", "{partner}'s parents", "my old flatmate", "my godson and his family",
               "my uncle on the farm", "our friends who just had a baby"],
              ["it was a long drive but worth it", "we stayed two nights", "there was cake", "we played cards late"]),
}  # fmt: skip


@dataclass
class Person:
    who: str
    partner: str
    pron: str
    sister: str
    rng: random.Random
    sessions: list[Session] = field(default_factory=list)
    # session -> (fact, [(user, reply), ...]): the fact is in the last user message (an answer to the reply
    # before it when there are two turns, as people tell news: "guess what…" / "what did she call him?")
    planned: dict[int, list[tuple[str, list[tuple[str, str]]]]] = field(default_factory=dict)
    planted_at: dict[str, int] = field(default_factory=dict)  # fact -> its session

    @property
    def project(self) -> str:
        return f"/home/{self.who}/journal"

    def fill(self, text: str) -> str:
        return text.format(partner=self.partner, pron=self.pron, sister=self.sister)

    def plant(self, session: int, key: str, user: str, reply: str, answer: tuple[str, str] | None = None) -> None:
        self.planted_at[key] = session
        turns = [(user, reply), *([answer] if answer else [])]
        self.planned.setdefault(session, []).append((key, [(self.fill(u), self.fill(r)) for u, r in turns]))


def _split(qid: str) -> str:
    return "held_out" if int(hashlib.sha1(qid.encode()).hexdigest(), 16) % 3 == 0 else "tune"


def _pick(rng: random.Random, pool: list, n: int) -> list:
    return rng.sample(pool, n)


def plan(person: Person, index: int, days: list[datetime]) -> list[dict]:
    """Plant one person's facts in their sessions and write the questions about them (keys: evidence)."""
    rng, p = person.rng, person
    questions: list[dict] = []

    def ask(category: str, question: str, keys: list[str], **extra: object) -> None:
        qid = f"{p.who}-{category}-{sum(q['category'] == category for q in questions):02d}"
        questions.append({"id": qid, "project": p.project, "category": category, "question": p.fill(question),
                          "keys": keys, "split": _split(qid), **extra})  # fmt: skip

    free = list(range(1, SESSIONS))
    rng.shuffle(free)

    def slot() -> int:
        return free.pop() if free else rng.randrange(1, SESSIONS)

    breed, pet = PETS[index]
    p.plant(
        slot(),
        "pet",
        "Big news from {sister}: she finally adopted a " + breed + " puppy!",
        "How exciting! What did she call him?",
        (f"{pet}. He already chewed one of her shoes on the first day.", f"{pet} is a great name."),
    )
    ask("single", "What is the name of {sister}'s new dog?", ["pet"])
    ask("abstention", "What is the name of {sister}'s cat?", [])
    allergen = ALLERGENS[index]
    p.plant(
        slot(),
        "allergy",
        f"The test results came back: I'm allergic to {allergen}, which explains a lot about those itchy evenings.",
        "Good that you know now. It's worth telling the people you eat with.",
    )
    ask("single", "What did the doctor find out I react badly to?", ["allergy"])
    book, author = BOOKS[index]
    p.plant(
        slot(),
        "book",
        f"I finished {book} by {author} last night and I think it's the best thing I've read in years.",
        f"{author} is wonderful. What stayed with you most?",
    )
    ask("single", "Which novel did I say was the best I'd read in years?", ["book"])
    ask("abstention", "Which poetry collection did {sister} recommend to me?", [])
    instrument, teacher = INSTRUMENTS[index]
    p.plant(
        slot(),
        "teacher",
        f"I've signed up for {instrument} lessons on Thursdays.",
        "Lovely! Who's teaching you?",
        (f"{teacher}, and she is very patient with me.", "Patience is exactly what beginners need."),
    )
    ask("single", "Who gives me my music lessons?", ["teacher"])
    ask("abstention", "How much do I pay for my swimming lessons?", [])
    car, colour = CARS[index], COLOURS[index]
    p.plant(
        slot(),
        "car",
        "We finally bought a car, after weeks of looking.",
        "Congratulations! What did you get?",
        (f"A second-hand {car} in {colour}, it smells of the previous owner's dog.", "Enjoy the freedom of it."),
    )
    ask("single", "What vehicle did we end up buying?", ["car"])
    ask("abstention", "What colour is {partner}'s motorbike?", [])
    restaurant, cuisine = RESTAURANTS[(index + 3) % len(RESTAURANTS)]
    p.plant(
        slot(),
        "anniversary",
        "{partner} surprised me for our anniversary.",
        "How lovely! What did {pron} plan?",
        (f"A table at {restaurant}, a tiny {cuisine} place with only six tables.", "How was the food?"),
    )
    ask("single", "Where did {partner} take me for our anniversary?", ["anniversary"])
    km = 6 + index
    p.plant(
        slot(),
        "commute",
        f"I've started cycling to the office, it's about {km} km each way along the river path.",
        "That's a lovely way to start the day, and good exercise too.",
    )
    ask("single", "How long is my bike ride to work?", ["commute"])
    ask("abstention", "Which bus line do I take to the office?", [])
    ask("single", "What allergy did I find out about?", ["allergy"])

    # multi: spread over two or three sessions
    trips = _pick(rng, CITIES, 3)
    for n, (city, why) in enumerate(zip(trips, ["my cousin's wedding", "a work conference", "a long weekend"],
                                        strict=True)):  # fmt: skip
        p.plant(
            slot(),
            f"trip{n}",
            f"Just back from {city}, we went for {why} and I walked about twenty thousand steps a day.",
            f"{city} is beautiful. Did you have a favourite spot?",
        )
    ask("multi", "Which cities have I travelled to this year?", ["trip0", "trip1", "trip2"])
    hobbies = _pick(rng, HOBBIES, 2)
    p.plant(
        slot(),
        "hobby0",
        f"I joined a {hobbies[0]} group that meets on Sunday mornings, it's mostly retirees and me.",
        "That sounds like a lovely mix of people.",
    )
    p.plant(
        slot(),
        "hobby1",
        f"New obsession: {hobbies[1]}. I bought all the gear on a whim yesterday.",
        "Ha, the gear is half the fun. Let me know how the first attempts go.",
    )
    ask("multi", "What new pastimes have I picked up?", ["hobby0", "hobby1"])
    gifts = _pick(rng, GIFTS, 2)
    p.plant(
        slot(),
        "gift0",
        f"For {{partner}}'s birthday I got {gifts[0]}, {{pron}} actually teared up.",
        "That must have felt wonderful to see.",
    )
    p.plant(
        slot(),
        "gift1",
        f"I gave {{partner}} {gifts[1]} for Christmas in July, our silly tradition.",
        "What a sweet tradition to keep.",
    )
    ask("multi", "What presents have I given {partner}?", ["gift0", "gift1"])
    ask("abstention", "What did {partner} give me for my birthday?", [])
    friends = _pick(rng, ["Noor", "Felix", "Sasha", "Bruno", "Ingrid", "Tariq"], 2)
    p.plant(
        slot(),
        "friend0",
        f"{friends[0]} is moving to Canada next month, I'm gutted, we've been friends since primary school.",
        "That's hard. Video calls aren't the same, but they help.",
    )
    p.plant(
        slot(),
        "friend1",
        f"And now {friends[1]} is leaving too, off to Singapore for a job. Everyone is going.",
        "Two goodbyes in one year is a lot. Be gentle with yourself.",
    )
    ask("multi", "Which of my friends are moving abroad?", ["friend0", "friend1"])

    # update: the newer one is the answer (said early in the year, changed late)
    job_old, job_new = JOBS[index], JOBS[(index + 4) % len(JOBS)]
    home_old, home_new = NEIGHBOURHOODS[index], NEIGHBOURHOODS[(index + 3) % len(NEIGHBOURHOODS)]
    gym_old, gym_new = GYMS[index % len(GYMS)]
    changes = [
        ("job", "Where do I work these days?", (1, 5), (13, 18),
         (f"I work as a {job_old[1]} at {job_old[0]}, it's steady if a bit dull.",
          "Steady has its merits. Do you like the people?"),
         (f"First week at the new job done! I'm a {job_new[1]} at {job_new[0]} now and I love it.",
          "Congratulations on the new role!")),
        ("home", "Which neighbourhood do we live in now?", (1, 6), (12, 19),
         (f"Our flat in {home_old} is tiny but the view over the rooftops is worth it.",
          "A good view makes a small place feel bigger."),
         (f"We moved! The new place is in {home_new}, two bedrooms and a little garden.",
          "A garden! Congratulations on the move.")),
        ("gym", "How do I keep fit nowadays?", (1, 6), (12, 19),
         (f"I go to {gym_old} three times a week to stay fit.", "Three times a week is a solid routine."),
         (f"I quit {gym_old} and switched to a {gym_new}, much kinder on my back.", "Listening to your body is wise.")),
    ]  # fmt: skip
    for key, question, early, late, (said, reply), (changed, answer) in changes:
        p.plant(rng.randrange(*early), f"{key}_old", said, reply)
        p.plant(rng.randrange(*late), f"{key}_new", changed, answer)
        ask("update", question, [f"{key}_new"], replaced=[f"{key}_old"])

    # inference: the answer is in the meaning, not the words
    for n, (said, question) in enumerate(_pick(rng, INFERENCE, 4)):
        p.plant(slot(), f"infer{n}", said, "That makes sense, thank you for telling me.")
        ask("inference", question, [f"infer{n}"])

    # temporal: one of several like events, picked by its month or by "last month"
    kinds = list(EVENT_KINDS)
    rng.shuffle(kinds)
    for kind in kinds[:2]:
        template, question, pool, details = EVENT_KINDS[kind]
        picks = _pick(rng, pool, 3)
        sessions = sorted(rng.sample(range(1, SESSIONS - 3), 3), key=lambda s: days[s])
        months = {days[s].month for s in sessions}
        if len(months) < 3:
            sessions = [1, 8, 14]
        for n, (s, what) in enumerate(zip(sessions, picks, strict=True)):
            p.plant(
                s,
                f"{kind}{n}",
                template.replace("{what}", what).replace("{detail}", rng.choice(details)),
                "That sounds like a lovely time.",
            )
        target = rng.randrange(3)
        month = MONTHS[days[sessions[target]].month - 1]
        ask("temporal", question.replace("{when}", f"in {month}"), [f"{kind}{target}"])
    # "last month", read against the history's own newest session
    last = days[SESSIONS - 1]
    previous = (last.replace(day=1) - timedelta(days=1)).month
    s = next(i for i in range(SESSIONS - 1, 0, -1) if days[i].month == previous)
    template, question, pool, details = EVENT_KINDS["concert" if "concert" not in kinds[:2] else "dinner"]
    kind = "concert" if "concert" not in kinds[:2] else "dinner"
    what = pool[(index + 5) % len(pool)]
    p.plant(
        s,
        f"{kind}-last",
        template.replace("{what}", what).replace("{detail}", details[0]),
        "That sounds like a lovely time.",
    )
    p.plant(rng.randrange(1, 8), f"{kind}-earlier", template.replace("{what}", pool[(index + 6) % len(pool)])
            .replace("{detail}", details[1]), "That sounds like a lovely time.")  # fmt: skip
    ask("temporal", question.replace("{when}", "last month"), [f"{kind}-last"])
    return questions


def build(folder: Path) -> list[dict]:
    """Write every person's sessions under `folder`; the questions with their evidence as entry ids."""
    questions: list[dict] = []
    for index, (who, partner, pron, sister) in enumerate(PEOPLE):
        person = Person(who, partner, pron, sister, random.Random(f"conversation-{who}"))
        first = START + timedelta(days=3 * index)
        days = [first + timedelta(days=GAP_DAYS * n, hours=person.rng.randint(0, 3)) for n in range(SESSIONS)]
        asked = plan(person, index, days)
        planted: dict[str, tuple[str, str]] = {}
        for n, day in enumerate(days):
            session = Session(person.rng, 1000 * (index + 1) + n, day, cwd=person.project)
            opening, *talk = person.rng.sample(SMALL_TALK, 7)
            chat: list[tuple[str | None, list[tuple[str, str]]]] = [
                (None, [(person.fill(u), person.fill(a))]) for u, a in talk
            ]
            for key, turns in person.planned.get(n, []):
                chat.insert(person.rng.randrange(len(chat) + 1), (key, turns))
            session.user(f"Evening! {person.fill(opening[0])}")
            session.assistant("Evening! Good to hear from you.")
            for key, turns in chat:
                for user, reply in turns:
                    entry = session.user(user)
                    session.assistant(reply)
                if key:
                    planted[key] = (session.id, entry)
            session.write(folder)
        for q in asked:
            q["evidence"] = [{"session_id": planted[k][0], "entry_id": planted[k][1]} for k in q.pop("keys")]
            if "replaced" in q:
                q["replaced"] = [{"session_id": planted[k][0], "entry_id": planted[k][1]} for k in q["replaced"]]
            questions.append(q)
    return questions


def main() -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    questions = build(OUT / "sessions")
    (OUT / "questions.json").write_text(json.dumps(questions, indent=1) + "\n")
    counts = {c: sum(q["category"] == c for q in questions) for c in sorted({q["category"] for q in questions})}
    held = sum(q["split"] == "held_out" for q in questions)
    print(f"{len(questions)} questions {counts}, {held} held out, in {OUT}")


if __name__ == "__main__":
    main()

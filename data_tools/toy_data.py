"""`python -m data_tools.toy_data`: a synthetic news-like corpus, made offline in seconds.

For the quick start: with no downloads, a small pointer-generator trained on this for 1,000
CPU steps (the quick-start's default) writes summaries that restate the key facts.

Each article reports one event (an arrest, a match, job cuts, an earthquake, an election, a
discovery, a rescue) with random people, places, organisations and numbers. Most surnames and
town names are invented from syllables, so with a vocabulary of a few thousand words they are
out of vocabulary and the model must copy them from the article. The first two sentences carry
the key facts; 4-10 background sentences (quotes, reactions, context, other names as
distractors) follow. The summary restates the key facts in a fixed form, using the article's
words, in 2-3 sentences. Text is already tokenized and lower-cased in the PTB style of the
real data (`-lrb-`, `'s`, `` `` ``, `n't`, `$ 5`).

The output layout is the one make_datafiles writes: `{set}.bin`, `chunked/{set}_NNN.bin`,
and `vocab` (counted over the training set). Output is a pure function of `--seed` and the
set sizes; each set has its own random stream, so val/test do not change with --num_train.
"""

from __future__ import annotations

import argparse
import random
import sys

from data_tools.finished_files import CHUNK_SIZE, FinishedFilesWriter
from data_tools.vocab_counts import VocabCounter
from pointer_generator import exit_codes
from pointer_generator.cli import arg_types
from pointer_generator.errors import DataError

MIN_ARTICLE_TOKENS, MAX_ARTICLE_TOKENS = 100, 200

FIRST_NAMES = """james john robert michael william david richard joseph thomas charles daniel
matthew anthony mark paul steven andrew kenneth joshua kevin brian george edward ronald timothy
jason jeffrey ryan jacob gary nicholas eric jonathan stephen larry justin scott brandon frank
benjamin gregory samuel raymond patrick alexander jack dennis jerry tyler aaron henry adam
douglas nathan peter zachary kyle walter harold carl arthur gerald roger keith jeremy terry
lawrence sean christian albert joe ethan austin jesse willie billy bryan bruce jordan ralph roy
noah dylan eugene wayne alan juan louis russell gabriel randy philip harry vincent bobby johnny
mary patricia jennifer linda elizabeth barbara susan jessica sarah karen nancy lisa margaret
betty sandra ashley dorothy kimberly emily donna michelle carol amanda melissa deborah
stephanie rebecca laura sharon cynthia kathleen amy shirley angela helen anna brenda pamela
nicole samantha katherine emma ruth christine catherine debra rachel carolyn janet virginia
maria heather diane julie joyce victoria kelly christina joan evelyn lauren judith olivia
martha cheryl megan andrea hannah jacqueline ann jean alice kathryn gloria teresa doris sara
janice julia marie madison grace judy theresa beverly denise marilyn amber danielle abigail
brittany rose diana natalie sophia alexis lori kayla jane""".split()
SYLLABLES = """al an ar ba bel ber bran cal car cor da del dor el en fal far fen gal gar
gor hal har hel is jan kal kar kel lan lar len mal mar mel mor nal nar nel or pal par pel
quin ral ran rel ros sal san sel sor tal tan tel tor val van vel vor wal wen win yar zel
zor""".split()
SURNAME_ENDINGS = "son ton ley ford field well worth ridge wick more by ham ings stone".split()
TOWN_ENDINGS = "ford ton bury field mouth wick ham stead port bridge dale ley chester".split()
CITIES = """london paris berlin madrid rome chicago boston dallas denver seattle toronto
sydney melbourne dublin glasgow leeds manchester liverpool bristol cardiff lisbon vienna prague
warsaw oslo stockholm helsinki athens cairo nairobi lagos mumbai delhi tokyo seoul beijing
shanghai manila jakarta lima bogota santiago houston phoenix atlanta miami detroit
portland""".split()
COUNTRIES = """england france germany spain italy canada australia ireland scotland wales
portugal austria poland norway sweden finland greece egypt kenya nigeria india japan china
peru chile mexico brazil turkey indonesia""".split()
DAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
MONTHS = """january february march april may june july august september october november
december""".split()
ORDINALS = "first second third fourth fifth sixth seventh eighth ninth tenth".split()
NUMBER_WORDS = "two three four five six seven eight nine ten".split()
ITEMS = """guns knives phones laptops watches paintings bicycles cameras tablets
passports""".split()
VEHICLES = "car van truck boat caravan garage flat shed".split()
CHARGES = """burglary theft fraud robbery assault arson smuggling""".split()
SPORTS_TEAMS = "united city rovers athletic wanderers rangers albion town".split()
INDUSTRIES = "motors foods bank airways steel textiles pharma energy systems".split()
SITES = "factory plant warehouse depot office mill".split()
ANIMALS = "frog beetle spider orchid lizard moth snail fern bat shrimp".split()
HABITATS = [
    "amazon rainforest",
    "andes mountains",
    "coral reef",
    "sahara desert",
    "arctic tundra",
    "borneo jungle",
    "mekong delta",
    "scottish highlands",
]
ROLES = "teacher nurse builder driver student farmer shopkeeper engineer chef doctor".split()
RELATIVES = "mother father sister brother wife husband daughter son neighbour friend".split()
ADJECTIVES = "terrible wonderful strange difficult sad great long busy frightening".split()
EMOTIONS = "shocked delighted devastated relieved proud surprised heartbroken".split()


class _World:
    """Random entities drawn from one RNG."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def pick(self, seq):
        return self.rng.choice(seq)

    def surname(self) -> str:
        r = self.rng
        return "".join(r.choice(SYLLABLES) for _ in range(r.randint(1, 2))) + r.choice(
            SURNAME_ENDINGS
        )

    def town(self) -> str:
        if self.rng.random() < 0.4:
            return self.pick(CITIES)
        return self.pick(SYLLABLES) + self.pick(SYLLABLES) + self.pick(TOWN_ENDINGS)

    def company(self) -> str:
        return self.pick(SYLLABLES) + self.pick(SYLLABLES) + " " + self.pick(INDUSTRIES)

    def count(self, lo: int, hi: int) -> str:
        n = self.rng.randint(lo, hi)
        return f"{n:,}"

    def slots(self) -> dict[str, str]:
        r = self.rng
        female = r.random() < 0.5
        first = self.pick(
            FIRST_NAMES[: len(FIRST_NAMES) // 2]
            if not female
            else FIRST_NAMES[len(FIRST_NAMES) // 2 :]
        )
        return {
            "first": first,
            "last": self.surname(),
            "first2": self.pick(FIRST_NAMES),
            "last2": self.surname(),
            "first3": self.pick(FIRST_NAMES),
            "last3": self.surname(),
            "pron": "she" if female else "he",
            "poss": "her" if female else "his",
            "age": str(r.randint(18, 79)),
            "city": self.town(),
            "city2": self.town(),
            "country": self.pick(COUNTRIES),
            "day": self.pick(DAYS),
            "day2": self.pick(DAYS),
            "month": self.pick(MONTHS),
            "num": self.count(2, 40),
            "big": self.count(120, 9000),
            "item": self.pick(ITEMS),
            "vehicle": self.pick(VEHICLES),
            "charge": self.pick(CHARGES),
            "team1": self.town() + " " + self.pick(SPORTS_TEAMS),
            "team2": self.town() + " " + self.pick(SPORTS_TEAMS),
            "score1": str(r.randint(2, 5)),
            "score2": str(r.randint(0, 1)),
            "ordinal": self.pick(ORDINALS),
            "company": self.company(),
            "site": self.pick(SITES),
            "pct": f"{r.randint(3, 40)}",
            "mag": f"{r.randint(50, 79) / 10:.1f}",
            "animal": self.pick(ANIMALS),
            "habitat": self.pick(HABITATS),
            "role": self.pick(ROLES),
            "relative": self.pick(RELATIVES),
            "adj": self.pick(ADJECTIVES),
            "emotion": self.pick(EMOTIONS),
            "n_words": self.pick(NUMBER_WORDS),
            "money": self.count(2, 90),
            "big2": self.count(120, 9000),
            "hour": str(r.randint(1, 11)),
            "year": str(r.randint(1990, 2014)),
        }


# Each event: (lead sentences carrying the facts, the summary restating them in fixed form).
EVENTS = [
    (
        [
            "{first} {last} , {age} , was arrested in {city} on {day} after police found {num} "
            "stolen {item} in {poss} {vehicle} .",
            "{last} was charged with {charge} and will appear before {city} magistrates on "
            "{day2} .",
        ],
        [
            "{first} {last} , {age} , was arrested in {city} on {day} .",
            "police found {num} stolen {item} in {poss} {vehicle} .",
            "{last} was charged with {charge} and will appear in court on {day2} .",
        ],
    ),
    (
        [
            "{team1} beat {team2} {score1}-{score2} on {day} , with {first} {last} scoring twice "
            "in the second half .",
            "the win lifts {team1} to {ordinal} place in the table .",
        ],
        [
            "{team1} beat {team2} {score1}-{score2} on {day} .",
            "{first} {last} scored twice for {team1} in the second half .",
            "the win lifts {team1} to {ordinal} place in the table .",
        ],
    ),
    (
        [
            "{company} said on {day} it will cut {big} jobs at its {site} in {city} after sales "
            "fell {pct} % .",
            "chief executive {first} {last} said the company had `` no other choice '' .",
        ],
        [
            "{company} will cut {big} jobs at its {site} in {city} .",
            "sales fell {pct} % , the company said on {day} .",
            "chief executive {first} {last} said there was no other choice .",
        ],
    ),
    (
        [
            "a magnitude {mag} earthquake struck near {city} , {country} , on {day} , killing at "
            "least {num} people .",
            "rescue teams led by {first} {last} were searching collapsed buildings overnight .",
        ],
        [
            "a magnitude {mag} earthquake struck near {city} , {country} , on {day} .",
            "at least {num} people were killed .",
            "rescue teams led by {first} {last} searched collapsed buildings .",
        ],
    ),
    (
        [
            "{first} {last} has been elected mayor of {city} with {pct} % of the vote , beating "
            "{first2} {last2} .",
            "{last} , a former {role} , promised to build {big} new homes .",
        ],
        [
            "{first} {last} has been elected mayor of {city} with {pct} % of the vote .",
            "{pron} beat {first2} {last2} .",
            "{last} , a former {role} , promised {big} new homes .",
        ],
    ),
    (
        [
            "scientists from the university of {city} have discovered a new species of {animal} "
            "in the {habitat} .",
            "the team , led by professor {first} {last} , found {num} of the animals during a "
            "{n_words}-week expedition .",
        ],
        [
            "a new species of {animal} has been discovered in the {habitat} .",
            "the team from the university of {city} was led by professor {first} {last} .",
            "they found {num} of the animals .",
        ],
    ),
    (
        [
            "a {age}-year-old {role} , {first} {last} , was rescued from the sea off {city} on "
            "{day} after {num} hours in the water .",
            "{last} was taken to hospital in {city2} , where {pron} is in a stable condition .",
        ],
        [
            "{first} {last} , {age} , was rescued from the sea off {city} on {day} .",
            "the {role} spent {num} hours in the water .",
            "{pron} is in a stable condition in hospital in {city2} .",
        ],
    ),
]

FILLERS = [
    "`` it was a {adj} day for everyone , '' said {first2} {last2} , a {role} from {city2} .",
    "{last} 's {relative} said {pron} was `` {emotion} '' by the news .",
    "the incident happened shortly after {hour} pm , according to witnesses .",
    "officials said more details would be released later this week .",
    "{first3} {last3} , who lives nearby , said : `` i could n't believe it . ''",
    "it is the {ordinal} time this year that {city2} has made the headlines .",
    "a spokesman for {city2} council declined to comment .",
    "in {year} , a similar case in {city2} attracted national attention .",
    "local people have set up a fund which has already raised $ {money},000 .",
    "the news was shared more than {big2} times on social media within hours .",
    "{first2} {last2} -lrb- pictured -rrb- described the scene as `` {adj} '' .",
    "residents of {city2} said they were {emotion} .",
    "the figures were first reported by the {city2} herald on {day2} .",
    "experts say it could take {n_words} months to know the full impact .",
    "`` we are {emotion} , '' {first3} {last3} told reporters outside .",
    "{last} , who grew up in {city2} , has {n_words} children .",
    "a report published in {month} warned that such events were becoming more common .",
    "`` this is not the end of the story , '' said {first3} {last3} .",
]


def make_example(rng: random.Random) -> tuple[str, str]:
    """One (article, abstract) pair, tokenized and lower-cased, abstract with <s> tags."""
    world = _World(rng)
    slots = world.slots()
    lead, summary = rng.choice(EVENTS)
    sentences = [s.format(**slots) for s in lead]
    if rng.random() < 0.3:
        sentences[0] = f"{slots['city']} , {slots['country']} -lrb- cnn -rrb- -- " + sentences[0]
    target = rng.randint(MIN_ARTICLE_TOKENS, MAX_ARTICLE_TOKENS)
    length = sum(len(s.split()) for s in sentences)
    fillers = rng.sample(FILLERS, len(FILLERS))
    for f in fillers:
        sent = f.format(**slots)
        if length + len(sent.split()) > MAX_ARTICLE_TOKENS:
            continue
        sentences.append(sent)
        length += len(sent.split())
        if length >= target:
            break
    abstract = " ".join(f"<s> {s.format(**slots)} </s>" for s in summary)
    return " ".join(sentences), abstract


def make_set(name: str, n: int, seed: int) -> list[tuple[str, str]]:
    # A string seed is hashed deterministically (not by PYTHONHASHSEED).
    rng = random.Random(f"pointer-generator-toy:{seed}:{name}")
    return [make_example(rng) for _ in range(n)]


def make_toy_data(
    out_dir: str,
    num_train: int = 4000,
    num_val: int = 200,
    num_test: int = 200,
    seed: int = 0,
    chunk_size: int = CHUNK_SIZE,
    stream=None,
) -> dict[str, int]:
    """Write the toy corpus into `out_dir`; returns the number of examples per set."""
    stream = stream if stream is not None else sys.stderr
    sizes = {"train": num_train, "val": num_val, "test": num_test}
    for name, n in sizes.items():
        if n < 0:
            raise DataError(f"--num_{name} must be >= 0, got {n}")
    if num_train == 0:
        raise DataError("--num_train must be positive: the vocab is counted over it")
    counter = VocabCounter()
    with FinishedFilesWriter(out_dir) as writer:
        for name, n in sizes.items():
            if n == 0:
                continue
            examples = make_set(name, n, seed)
            if name == "train":
                for article, abstract in examples:
                    counter.add(article, abstract)
            writer.write_set(name, examples, chunk_size)
        words = writer.write_vocab(counter)
    print(
        f"toy data: {num_train} train, {num_val} val, {num_test} test examples and a "
        f"{words}-word vocab in {out_dir}",
        file=stream,
    )
    return sizes


@exit_codes.command
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m data_tools.toy_data",
        description="Write a small synthetic summarization corpus in the original .bin format.",
    )
    p.add_argument("--out_dir", required=True, help="output folder (finished_files layout)")
    p.add_argument("--num_train", type=arg_types.positive_int, default=4000)
    p.add_argument("--num_val", type=arg_types.positive_int, default=200)
    p.add_argument("--num_test", type=arg_types.positive_int, default=200)
    p.add_argument("--seed", type=arg_types.non_negative_int, default=0)
    p.add_argument("--chunk_size", type=arg_types.positive_int, default=CHUNK_SIZE)
    args = p.parse_args(argv)
    make_toy_data(
        args.out_dir, args.num_train, args.num_val, args.num_test, args.seed, args.chunk_size
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

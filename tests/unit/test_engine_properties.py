"""Property tests of the PotGroup engine over random configurations and random play.

A random pot group (commission 0-30 %, 1-3 pots with whole or decimal shares summing to 100 %,
optional ceilings with overflow chains, optional base, optional mystery pot, which may have no
share of its own, may take overflow from a reserve and may overflow itself, optional opening
balances with fractions of a peso) plays a random sequence of commands on up to three linked
tables: lock (sometimes with an invalid bet), forfeit, resolve (random one-deck hands dealt from
a shuffled deck, with occasional forced royal/straight flush/four of a kind/full house/flush
hands, and sometimes a duplicate card) and configuration proposals. After every step:

* M2 holds: ``check_conservation()`` and the identity recomputed here from the group's fields;
* no pot is negative; the sign shows ``main // 10**12`` and never more than main (M3);
* the engine agrees exactly with an independent reference model written from the rules page
  (balances as exact Fractions of a peso; awards, their order and amounts; S1-S8, C1-C7, X2,
  the mystery pot's crossing counted bet by bet with overflow, C5);
* percentage prizes split equally with the whole remainder to the lowest seat (S3, S4);
* with levels (L1-L3) and envy bonuses (V1-V3), sometimes drawn: each prize from its level,
  its shortfall from that level's reserves, each level that paid back to its base, envy bonuses
  to every other seat with an unforfeited locked bet (linked: at every table), after the fixed
  multiples and before the percentages;
* a refused command changes nothing (snapshot bytes equal);
* a snapshot restores to identical bytes, and a group restored from an earlier snapshot behaves
  identically (same events, same final snapshot) when the same commands are replayed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from itertools import pairwise
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jackpot.domain.config import PotGroupConfig, load_config
from jackpot.domain.engine import PotGroup
from jackpot.domain.errors import DomainError
from jackpot.domain.events import Event, MysteryAwarded, PrizeAwarded
from jackpot.domain.level_figures import level_figures
from jackpot.domain.money import MINOR_PER_PESO, PPM, format_percent

RANKS = "23456789TJQKA"
SUITS = "SHDC"
DECK = [rank + suit for rank in RANKS for suit in SUITS]
SEATS = {"caribbean": 7, "draw": 6, "go_poker": 7}
TABLES = {"T1": "caribbean", "T2": "draw", "T3": "go_poker"}

# The default paytable, restated from the rules page (P): fixed multiples, then percentages.
FIXED = (("FLUSH", 50), ("FULL_HOUSE", 100), ("FOUR_OF_A_KIND", 500))
PERCENT = (("STRAIGHT_FLUSH", Fraction(1, 10), 5000), ("ROYAL_FLUSH", Fraction(1), None))


def reference_category(cards: Sequence[str]) -> str | None:
    ranks = sorted(RANKS.index(c[0]) for c in cards)
    flush = len({c[1] for c in cards}) == 1
    straight = len(set(ranks)) == 5 and (ranks[4] - ranks[0] == 4 or ranks == [0, 1, 2, 3, 12])
    counts = sorted(Counter(ranks).values(), reverse=True)
    if flush and straight:
        return "ROYAL_FLUSH" if ranks[0] == 8 else "STRAIGHT_FLUSH"
    if counts[0] == 4:
        return "FOUR_OF_A_KIND"
    if counts[:2] == [3, 2]:
        return "FULL_HOUSE"
    return "FLUSH" if flush else None


def trigger_source(low: int, high: int) -> tuple[int, bytes]:
    """Deterministic and pure, so a restored group draws exactly what the original draws."""
    return low + (low * 7 + high) % (high - low + 1), b"\x5a" * 16


def peso(minor: int) -> Fraction:
    return Fraction(minor, MINOR_PER_PESO)


# ----------------------------------------------------------------------- the reference model


@dataclass
class ModelConfig:
    version: int
    commission: Fraction
    shares: dict[str, Fraction]  # pot -> share, in config order
    ceilings: dict[str, tuple[Fraction, str]]
    reserve_order: list[str]
    base: Fraction
    min_bet: int
    max_bet: int
    credit: int
    mystery: tuple[str, int, int] | None
    # L1: (name, pot, base, reserves), the main level first; L2: each hand's level;
    # V1, V2: hand -> (bonus pesos, paying level, linked)
    levels: list[tuple[str, str, Fraction, list[str]]] = field(default_factory=list)
    prize_levels: dict[str, str] = field(default_factory=dict)
    envy: dict[str, tuple[int, str, bool]] = field(default_factory=dict)

    def level(self, hand: str) -> tuple[str, str, Fraction, list[str]]:
        name = self.prize_levels.get(hand, self.levels[0][0])
        return next(level for level in self.levels if level[0] == name)


@dataclass
class Model:
    """The rules page, restated as plainly as possible, in exact pesos."""

    config: ModelConfig
    balances: dict[str, Fraction]
    house: Fraction
    collected: Fraction = Fraction(0)
    commission: Fraction = Fraction(0)
    awarded: Fraction = Fraction(0)
    pending: list[ModelConfig] = field(default_factory=list)
    locked: dict[str, tuple[dict[int, int], set[int]]] = field(default_factory=dict)
    trigger: int | None = None
    pools: list[tuple[str, int, dict[int, int], dict[int, int]]] = field(default_factory=list)

    def credit(self, pot: str, amount: Fraction) -> None:  # C5
        if pot in self.config.ceilings:
            ceiling, target = self.config.ceilings[pot]
            room = max(ceiling - self.balances[pot], Fraction(0))
            if amount > room:
                self.balances[pot] += room
                self.credit(target, amount - room)
                return
        self.balances[pot] += amount

    def contribute(self, bet: int) -> None:
        cfg = self.config
        net = bet * (1 - cfg.commission)  # C2
        for pot, share in cfg.shares.items():  # C3, in config order; C5 down the chain
            self.credit(pot, net * share)

    def lock(self, table: str, bets: dict[int, int]) -> list[tuple[int, int]]:
        cfg = self.config
        self.locked[table] = (dict(bets), set())
        total = sum(bets.values())
        if not total:
            return []
        self.collected += total
        self.commission += total * cfg.commission  # C2
        if cfg.mystery is None:
            self.contribute(total)
            return []
        # X2: bets are added one at a time from seat 1; the first whose contribution takes the
        # mystery pot to the trigger or past it, overflow into it included (C5), wins it.
        pot, low, high = cfg.mystery
        assert self.trigger is not None
        winner = None
        for seat in sorted(bets):
            self.contribute(bets[seat])
            if winner is None and self.balances[pot] >= self.trigger:
                winner = seat
        if winner is None:
            return []
        paid = self.trigger
        self.balances[pot] -= paid
        self.awarded += paid
        self.trigger = trigger_source(low, high)[0]
        return [(winner, paid)]

    def take(self, amount: Fraction, level: tuple[str, str, Fraction, list[str]]) -> None:
        for pot in [level[1], *level[3]]:  # S7, L2: the level's pot, its reserves, the house
            taken = min(self.balances[pot], amount)
            self.balances[pot] -= taken
            amount -= taken
        self.house += amount

    def pay(self, paid: list[tuple[str, int, str, int]], award: tuple[str, int, str, int]) -> str:
        """Pay one award from its hand's level (an envy bonus: from the bonus's level)."""
        hand = award[2].removeprefix("ENVY_")
        level = self.config.level(hand)
        if award[2].startswith("ENVY_"):
            level = next(lv for lv in self.config.levels if lv[0] == self.config.envy[hand][1])
        self.take(Fraction(award[3]), level)
        self.awarded += award[3]
        paid.append(award)
        return level[0]

    def envy(
        self, table: str, won: dict[str, list[int]], bets: dict[int, int], forfeited: set[int]
    ) -> list[tuple[str, int, str, int]]:
        """V1-V3: the envy bonuses of a round, in the order they are paid."""
        bonuses = []
        for hand in [h for h, _ in FIXED] + [h for h, _, _ in PERCENT]:
            if hand not in self.config.envy:
                continue
            amount, _, linked = self.config.envy[hand]
            for winner in won.get(hand, []):
                rounds = [(table, bets, forfeited)]
                if linked:
                    rounds += [(t, *self.locked[t]) for t in sorted(self.locked) if t != table]
                for where, seated, folded in rounds:
                    for seat in sorted(seated):
                        if seat not in folded and (where, seat) != (table, winner):
                            bonuses.append((where, seat, f"ENVY_{hand}", amount))
        return bonuses

    def resolve(
        self, table: str, hands: dict[int, list[str]], community: list[str]
    ) -> list[tuple[str, int, str, int]]:
        bets, forfeited = self.locked.pop(table)
        winners: dict[str, list[int]] = {}
        for seat in sorted(hands):
            if seat in forfeited:  # E2, E3
                continue
            category = reference_category(hands[seat] + community)
            if category:
                winners.setdefault(category, []).append(seat)
        paid: list[tuple[str, int, str, int]] = []
        levels_paid = set()
        for prize, multiple in FIXED:  # S1
            for seat in winners.get(prize, []):
                levels_paid.add(self.pay(paid, (table, seat, prize, multiple * bets[seat])))
        for bonus in self.envy(table, winners, bets, forfeited):  # V3: after the multiples
            levels_paid.add(self.pay(paid, bonus))
        jackpot = False
        for prize, percent, cap in PERCENT:  # S2
            seats = winners.get(prize, [])
            if not seats:
                continue
            level = self.config.level(prize)
            pool = int(self.balances[level[1]] * percent)  # S6: floor (non-negative)
            share, remainder = divmod(pool, len(seats))
            split = {seat: share + (remainder if seat == seats[0] else 0) for seat in seats}
            amounts = {}
            for seat in seats:  # S5: seat 1 first
                amount = split[seat] if cap is None else min(split[seat], cap * bets[seat])  # S4
                amounts[seat] = amount
                levels_paid.add(self.pay(paid, (table, seat, prize, amount)))
            self.pools.append((prize, pool, split, amounts))
            jackpot = jackpot or (percent == 1 and level[1] == "main")
        self.settle(levels_paid, jackpot)
        return paid

    def settle(self, levels_paid: set[str], jackpot: bool) -> None:
        """C7, S8 at a reset of the main level; L3 for each other level that paid."""
        main_paid = self.config.levels[0][0] in levels_paid
        if jackpot or (main_paid and self.balances["main"] < self.config.base):
            if self.pending:  # C7: the newest pending version, at the reset
                self.config = self.pending[-1]
                self.pending = []
            self.refill("main", self.config.base, self.config.levels[0][3])
        for name, pot, base, reserves in self.config.levels[1:]:
            if name in levels_paid:
                self.refill(pot, base, reserves)

    def refill(self, pot: str, base: Fraction, reserves: list[str]) -> None:  # S8, L3
        missing = base - self.balances[pot]
        if missing > 0:
            for reserve in reserves:
                taken = min(self.balances[reserve], missing)
                self.balances[reserve] -= taken
                missing -= taken
            self.house += missing
            self.balances[pot] = base


# ------------------------------------------------------------------------ strategies


def _shares(draw: Callable[..., Any], n: int) -> list[int]:
    whole = draw(st.booleans())
    unit = 10_000 if whole else 1
    cuts = draw(st.lists(st.integers(0, PPM // unit), min_size=n - 1, max_size=n - 1))
    points = sorted([0, PPM, *(c * unit for c in cuts)])
    return [b - a for a, b in pairwise(points)]


# (a share of its own, overflow from a reserve) for a mystery pot
MYSTERY_FEEDS = [(True, False), (False, True), (True, True), (False, False)]


@st.composite
def configs(
    draw: Callable[..., Any],
    names: list[str] | None = None,
    limits: tuple[int, int, int] | None = None,
    mystery: dict[str, Any] | None = None,
    version: int = 1,
) -> dict[str, Any]:
    if names is None:
        names = ["main", *(f"r{i}" for i in range(1, draw(st.integers(1, 3))))]
    if mystery is None and len(names) > 1 and version == 1 and draw(st.booleans()):
        if len(names) == 2 and draw(st.booleans()):
            names = [*names, "r2"]  # room for a reserve that overflows into the mystery pot
        mystery = {"pot": names[-1], "min": draw(st.integers(1, 50)), "max": 0}
        mystery["max"] = mystery["min"] + draw(st.integers(0, 200))
    mystery_pot = None if mystery is None else mystery["pot"]
    shares = _shares(draw, len(names))
    # X2, C5: how the mystery pot (the last pot) is fed: by a share of its own, by a reserve's
    # overflow, by both, or by neither (then only an opening balance can take it to a trigger).
    feeder = None
    if mystery_pot is not None:
        own_share, overflowed = draw(st.sampled_from(MYSTERY_FEEDS))
        if not own_share:
            shares[0] += shares[-1]
            shares[-1] = 0
        if overflowed and len(names) > 2:
            feeder = names[-2]
    pots: list[dict[str, Any]] = []
    for i, (name, share) in enumerate(zip(names, shares, strict=True)):
        pot: dict[str, Any] = {"name": name, "percent": format_percent(share)}
        targets = ["main", *names[i + 1 :]]  # the mystery pot too (overflow feeds it, C5)
        if name == feeder:
            pot["ceiling"] = draw(st.integers(0, 2_000))
            pot["overflow_to"] = mystery_pot
        elif i and draw(st.booleans()):
            # C5: a reserve (or the mystery pot) may overflow to main or to a later pot (no loops).
            pot["ceiling"] = draw(st.integers(0, 20_000))
            pot["overflow_to"] = draw(st.sampled_from(targets))
        pots.append(pot)
    if limits is None:
        credit = draw(st.sampled_from([1, 5, 1000]))
        low = credit * draw(st.integers(1, 3))
        limits = (low, low + credit * draw(st.integers(0, 10)), credit)
    commission = draw(
        st.one_of(st.integers(0, 30).map(lambda p: p * 10_000), st.integers(0, 300_000))
    )
    data: dict[str, Any] = {
        "version": version,
        "commission_percent": format_percent(commission),
        "base": draw(st.sampled_from([0, 0, 100, 5_000, 200_000])),
        "pots": pots,
        "min_bet": limits[0],
        "max_bet": limits[1],
        "credit_value": limits[2],
    }
    reserves = [n for n in names[1:] if mystery is None or n != mystery["pot"]]
    levels = draw(level_lists(reserves))
    if levels:
        data["levels"] = levels
    elif reserves and draw(st.booleans()):
        data["reserve_order"] = draw(st.permutations(reserves))
    if levels or draw(st.integers(0, 3)) == 0:
        data["paytable"] = draw(leveled_paytables([lv["name"] for lv in levels] or ["main"]))
    if mystery is not None:
        data["mystery"] = mystery
    return data


@st.composite
def level_lists(draw: Callable[..., Any], reserves: list[str]) -> list[dict[str, Any]]:
    """L1: sometimes none; else some of the reserves made levels, the others each the reserve
    of one level (the main level, named "top", included)."""
    if not reserves or not draw(st.booleans()):
        return []
    pots = draw(
        st.lists(st.sampled_from(reserves), min_size=1, max_size=len(reserves), unique=True)
    )
    owners = {n: draw(st.integers(0, len(pots))) for n in reserves if n not in pots}
    levels: list[dict[str, Any]] = [
        {"name": "top", "reserve_order": [n for n, owner in owners.items() if owner == 0]}
    ]
    for index, pot in enumerate(pots, 1):
        levels.append(
            {
                "name": f"lv{index}",
                "pot": pot,
                "base": draw(st.sampled_from([0, 50, 2_000])),
                "reserve_order": [n for n, owner in owners.items() if owner == index],
            }
        )
    return levels


@st.composite
def leveled_paytables(draw: Callable[..., Any], levels: list[str]) -> dict[str, Any]:
    """The SCJ paytable (P), each hand paid by a drawn level (L2), some with an envy bonus
    (V1) from a drawn level, sometimes linked (V2). Every level pays at least one fixed prize,
    so its pot and its reserves are read (C3, L1: a configuration whose money no prize or reseed
    reads is refused)."""
    entries: list[dict[str, Any]] = [
        *({"hand": hand, "multiple": multiple} for hand, multiple in FIXED),
        {"hand": "STRAIGHT_FLUSH", "percent": "10", "cap_multiple": 5000},
        {"hand": "ROYAL_FLUSH", "percent": "100"},
    ]
    owners = draw(st.permutations(range(len(FIXED))))  # fixed hand -> the level it must serve
    for index, entry in enumerate(entries):
        if len(levels) > 1:
            owner = owners[index] if index < len(FIXED) else len(levels)
            entry["level"] = levels[owner] if owner < len(levels) else draw(st.sampled_from(levels))
        if draw(st.integers(0, 2)) == 0:
            envy: dict[str, Any] = {"amount": draw(st.sampled_from([1, 50, 500]))}
            if draw(st.booleans()):
                envy["level"] = draw(st.sampled_from(levels))
            envy["linked"] = draw(st.booleans())
            entry["envy"] = envy
    return {"name": "scj-levels", "evaluator": "poker", "prizes": entries}


def model_config(cfg: PotGroupConfig) -> ModelConfig:
    return ModelConfig(
        version=cfg.version,
        commission=Fraction(cfg.commission_ppm, PPM),
        shares={p.name: Fraction(p.share_ppm, PPM) for p in cfg.pots},
        ceilings={
            p.name: (peso(p.ceiling), p.overflow_to)
            for p in cfg.pots
            if p.ceiling is not None and p.overflow_to is not None
        },
        reserve_order=list(cfg.reserve_order),
        base=peso(cfg.base),
        min_bet=cfg.min_bet,
        max_bet=cfg.max_bet,
        credit=cfg.credit_value,
        mystery=None
        if cfg.mystery is None
        else (cfg.mystery.pot, cfg.mystery.min_pesos, cfg.mystery.max_pesos),
        levels=[(lv.name, lv.pot, peso(lv.base), list(lv.reserve_order)) for lv in cfg.levels],
        # L2, V1: a hand's level is the one it names, else the main level; a bonus's level the
        # one it names, else its hand's
        prize_levels={
            hand: prize.level or cfg.levels[0].name for hand, prize in cfg.paytable.prizes.items()
        },
        envy={
            hand: (
                prize.envy.amount_pesos,
                prize.envy.level or prize.level or cfg.levels[0].name,
                prize.envy.linked,
            )
            for hand, prize in cfg.paytable.prizes.items()
            if prize.envy is not None
        },
    )


FORCED_KINDS = ["random", "random", "royal", "straight_flush", "quads", "full_house", "flush"]


def forced_hand(draw: Callable[..., Any], kind: str) -> list[str]:
    suit = draw(st.sampled_from(SUITS))
    if kind == "royal":
        return [r + suit for r in "TJQKA"]
    if kind == "straight_flush":
        low = draw(st.integers(-1, 7))  # -1: the wheel A-2-3-4-5
        ranks = [RANKS[(low + i) % 13] for i in range(5)]
        return [r + suit for r in ranks]
    if kind == "quads":
        rank, kicker = draw(st.lists(st.sampled_from(RANKS), min_size=2, max_size=2, unique=True))
        return [rank + s for s in SUITS] + [kicker + suit]
    if kind == "full_house":
        three, two = draw(st.lists(st.sampled_from(RANKS), min_size=2, max_size=2, unique=True))
        suits3 = draw(st.lists(st.sampled_from(SUITS), min_size=3, max_size=3, unique=True))
        suits2 = draw(st.lists(st.sampled_from(SUITS), min_size=2, max_size=2, unique=True))
        return [three + s for s in suits3] + [two + s for s in suits2]
    ranks = draw(st.lists(st.sampled_from(RANKS), min_size=5, max_size=5, unique=True))
    return [r + suit for r in ranks]


def deal(
    draw: Callable[..., Any], game: str, seats: list[int]
) -> tuple[dict[int, list[str]], list[str]]:
    """One round's results from one shuffled deck, some seats with forced strong hands."""
    deck = list(draw(st.permutations(DECK)))
    used: set[str] = set()

    def take(n: int) -> list[str]:
        cards = [c for c in deck if c not in used][:n]
        used.update(cards)
        return cards

    def force(kind: str) -> list[str] | None:
        if kind == "random":
            return None
        cards = forced_hand(draw, kind)
        if used & set(cards):
            return None
        used.update(cards)
        return cards

    hands: dict[int, list[str]] = {}
    community: list[str] = []
    if game == "go_poker":
        if seats and (cards := force(draw(st.sampled_from(FORCED_KINDS)))) is not None:
            hands[seats[0]] = cards[:3]
            community = cards[3:]
        else:
            community = take(2)
        for seat in seats:
            hands.setdefault(seat, take(3))
        return hands, community
    for seat in seats:
        cards = force(draw(st.sampled_from(FORCED_KINDS)))
        hands[seat] = cards if cards is not None else take(5)
    return hands, community


# --------------------------------------------------------------------------- the checks


Command = tuple[str, tuple[Any, ...]]


def run(group: PotGroup, command: Command) -> list[Event] | str:
    """Run one command; the refusal reason instead of events when it is refused."""
    name, args = command
    try:
        result: list[Event] = getattr(group, name)(*args)
    except DomainError as error:
        return error.reason.value
    return result


def check_invariants(group: PotGroup, model: Model) -> None:
    group.check_conservation()
    # M2 recomputed here from the group's fields.
    assert group.collected + group.house_advance == (
        group.commission + sum(group.balances.values()) + group.awarded
    )
    assert all(balance >= 0 for balance in group.balances.values()), group.balances
    # M3: the sign floors main; never more than main.
    assert group.sign_value == group.balances["main"] // 10**12
    assert group.sign_value * MINOR_PER_PESO <= group.balances["main"]
    for level in level_figures(group):  # L4, M3: each level's sign, floored
        assert level.sign_value * MINOR_PER_PESO <= level.balance == group.balances[level.pot]
        assert level.balance < (level.sign_value + 1) * MINOR_PER_PESO
    # The reference model agrees exactly.
    assert {k: peso(v) for k, v in group.balances.items()} == model.balances
    assert peso(group.collected) == model.collected
    assert peso(group.commission) == model.commission
    assert peso(group.awarded) == model.awarded
    assert peso(group.house_advance) == model.house
    assert group.config.version == model.config.version
    assert [c.version for c, _, _ in group.pending] == [c.version for c in model.pending]


def check_splits(model: Model) -> None:
    """S3, S4: equal whole-peso parts; the whole remainder (< n) to the lowest seat; caps."""
    for _prize, pool, split, amounts in model.pools:
        seats = sorted(split)
        lowest = seats[0]
        others = {split[s] for s in seats[1:]}
        assert len(others) <= 1
        share = pool // len(seats)
        assert split[lowest] - share == pool % len(seats) < len(seats)
        assert all(split[s] == share for s in seats[1:])
        assert sum(split.values()) == pool
        assert all(amounts[s] <= split[s] for s in seats)
    model.pools.clear()


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.data())
def test_random_play_keeps_every_invariant(data: st.DataObject) -> None:
    draw = data.draw
    raw = draw(configs(), label="config")
    cfg = load_config(raw)
    mcfg = model_config(cfg)
    names = [p.name for p in cfg.pots]
    limits = (cfg.min_bet, cfg.max_bet, cfg.credit_value)
    opening = None
    if draw(st.booleans(), label="opening balances"):
        opening = {
            n: draw(st.integers(0, 5_000_000 * MINOR_PER_PESO), label=f"open {n}") for n in names
        }
    group, _ = PotGroup.open("G", cfg, opening, trigger_source=trigger_source)
    balances = {n: Fraction(0) for n in names}
    if opening is None:  # C4, L1: every level's pot opens at its base
        balances["main"] = mcfg.base
        for _, pot, base, _ in mcfg.levels[1:]:
            balances[pot] = base
    else:
        balances.update({n: peso(v) for n, v in opening.items()})
    model = Model(mcfg, balances, house=sum(balances.values(), Fraction(0)))
    if cfg.mystery is not None:
        model.trigger = trigger_source(cfg.mystery.min_pesos, cfg.mystery.max_pesos)[0]
    tables = draw(st.lists(st.sampled_from(sorted(TABLES)), min_size=1, max_size=3, unique=True))
    for table in tables:
        group.link_table(
            table, TABLES[table], min_bet=limits[0], max_bet=limits[1], credit_value=limits[2]
        )
    check_invariants(group, model)

    commands: list[Command] = []
    outcomes: list[list[Event] | str] = []
    snapshots: list[bytes] = []
    steps = draw(st.integers(1, 20), label="steps")
    restart = draw(st.integers(0, steps - 1), label="restart at")
    for step in range(steps):
        if step == restart:
            snapshots.append(group.snapshot())
        table = draw(st.sampled_from(tables))
        game = TABLES[table]
        action = "propose" if draw(st.integers(0, 7)) == 5 else "play"
        before = group.snapshot()
        expect_refusal = False
        paid: list[tuple[str, int, str, int]] = []
        mystery_paid: list[tuple[int, int]] = []
        if action == "propose":
            latest = model.pending[-1] if model.pending else model.config
            new = draw(
                configs(
                    names=names,
                    limits=limits,
                    mystery=raw.get("mystery"),
                    version=latest.version + 1,
                ),
                label="proposal",
            )
            new_cfg = load_config(new)
            command: Command = ("propose_config", (new_cfg, "ops", f"step {step}"))
            model.pending.append(model_config(new_cfg))
        elif table not in group.locked:
            seats = draw(st.sets(st.integers(1, SEATS[game]), max_size=SEATS[game]))
            steps_in_range = (limits[1] - limits[0]) // limits[2]
            bets = {s: limits[0] + limits[2] * draw(st.integers(0, steps_in_range)) for s in seats}
            if bets and draw(st.integers(0, 9)) == 0:
                bets[min(bets)] = limits[1] + limits[2]  # E1: one bet above the limit
                expect_refusal = True
            command = ("lock_round", (table, f"R{step}", bets))
            if not expect_refusal:
                mystery_paid = model.lock(table, bets)
        else:
            round_id = group.locked[table].round_id
            bets_now = model.locked[table][0]
            if bets_now and draw(st.integers(0, 3)) == 0:
                seat = draw(st.sampled_from(sorted(bets_now)))
                reason = "CARD_EXCHANGE" if game == "draw" and draw(st.booleans()) else "FOLD"
                command = ("forfeit", (table, round_id, seat, reason))
                model.locked[table][1].add(seat)
            else:
                reported = sorted(s for s in bets_now if draw(st.integers(0, 5)))
                hands, community = deal(draw, game, reported)
                if len(reported) >= 2 and draw(st.integers(0, 9)) == 0:
                    a, b = reported[:2]  # one deck: a card seen twice refuses the round
                    hands[b] = [hands[a][0], *hands[b][1:]]
                    expect_refusal = True
                command = ("resolve_round", (table, round_id, hands, community))
                if not expect_refusal:
                    paid = model.resolve(table, hands, community)
        commands.append(command)
        outcome = run(group, command)
        outcomes.append(outcome)
        if expect_refusal:
            assert isinstance(outcome, str), outcome
            assert group.snapshot() == before  # a refused command changes nothing
        else:
            assert not isinstance(outcome, str), (command, outcome)
            got = [
                (e.table_id, e.seat, e.prize, e.amount_pesos)
                for e in outcome
                if isinstance(e, PrizeAwarded)
            ]
            assert got == paid
            got_mystery = [
                (e.seat, e.amount_pesos) for e in outcome if isinstance(e, MysteryAwarded)
            ]
            assert got_mystery == mystery_paid
        check_invariants(group, model)
        check_splits(model)
        snap = group.snapshot()
        assert PotGroup.from_snapshot(snap, trigger_source).snapshot() == snap

    # A group restored from an earlier snapshot replays the later commands identically.
    assert len(snapshots) == 1
    if snapshots:
        restored = PotGroup.from_snapshot(snapshots[0], trigger_source)
        replay = [run(restored, c) for c in commands[restart:]]
        assert replay == outcomes[restart:]
        assert restored.snapshot() == group.snapshot()


@settings(max_examples=150, deadline=None)
@given(configs(), st.data())
def test_one_lock_allocates_exactly(raw: dict[str, Any], data: st.DataObject) -> None:
    """C2, C3, C5: one lock on an empty group: commission + pots == collected, each pot exact."""
    cfg = load_config(raw)
    empty = {pot.name: 0 for pot in cfg.pots}  # no level opens at its base here
    group, _ = PotGroup.open("G", replace(cfg, base=0), empty, trigger_source=trigger_source)
    group.link_table(
        "T1",
        "caribbean",
        min_bet=cfg.min_bet,
        max_bet=cfg.max_bet,
        credit_value=cfg.credit_value,
    )
    seats = data.draw(st.sets(st.integers(1, 7), min_size=1))
    bets = {s: cfg.max_bet for s in seats}
    group.lock_round("T1", "R1", bets)
    total = sum(bets.values())
    assert group.collected == total * MINOR_PER_PESO
    assert peso(group.commission) == total * Fraction(cfg.commission_ppm, PPM)
    mystery = sum(group.wins.values())  # a mystery prize may have hit already
    assert group.commission + sum(group.balances.values()) + mystery * MINOR_PER_PESO == (
        group.collected
    )
    if all(p.ceiling is None for p in cfg.pots) and cfg.mystery is None:
        net = total * (1 - Fraction(cfg.commission_ppm, PPM))
        for pot in cfg.pots:
            assert peso(group.balances[pot.name]) == net * Fraction(pot.share_ppm, PPM)


# Money leaves a pot only by a prize paid from it or the S8 top-up after a reset (R2).
POT_DEBITS = ("PrizeAwarded", "MysteryAwarded", "PotReseeded")


def meters(group: PotGroup) -> dict[str, int]:
    counted = {
        name: getattr(group, name)
        for name in ("collected", "commission", "awarded", "house_advance", "overflow")
    }
    counted.update({f"hits {prize}": n for prize, n in group.hits.items()})
    counted.update({f"wins {prize}": n for prize, n in group.wins.items()})
    return counted


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configs(), st.data())
def test_R2_no_meter_ever_decreases_outside_a_paid_award(
    raw: dict[str, Any], data: st.DataObject
) -> None:
    """R2: after every command of random play, no counter (collected, commission, awarded, house
    advances, overflow, hits and wins per prize) is lower than before, and a pot that holds less
    than before lost exactly what the command's awards and reseed took out of it."""
    cfg = load_config(raw)
    group, _ = PotGroup.open("G", cfg, trigger_source=trigger_source)
    group.link_table(
        "T1", "caribbean", min_bet=cfg.min_bet, max_bet=cfg.max_bet, credit_value=cfg.credit_value
    )
    for step in range(data.draw(st.integers(1, 16), label="steps")):
        before_meters, before_pots = meters(group), dict(group.balances)
        if "T1" not in group.locked:
            seats = data.draw(st.sets(st.integers(1, 7), min_size=1), label="seats")
            outcome = run(
                group, ("lock_round", ("T1", f"R{step}", dict.fromkeys(seats, cfg.max_bet)))
            )
        else:
            bets = group.locked["T1"].bets
            hands, community = deal(data.draw, "caribbean", sorted(bets))
            round_id = group.locked["T1"].round_id
            outcome = run(group, ("resolve_round", ("T1", round_id, hands, community)))
        assert not isinstance(outcome, str), outcome
        after = meters(group)
        assert all(after.get(name, 0) >= n for name, n in before_meters.items()), (
            before_meters,
            after,
        )
        debits: Counter[str] = Counter()
        for event in outcome:
            for source, _, amount in getattr(event, "transfers", ()):
                if source.startswith("pot:"):
                    assert type(event).__name__ in POT_DEBITS, event
                    debits[source.removeprefix("pot:")] += amount
        for pot, balance in group.balances.items():
            if balance < before_pots[pot]:
                assert debits[pot] >= before_pots[pot] - balance, (pot, debits)

"""The rule extractor by category of phrasing: corrections with and without a marker, the
user's organisation, standing instructions, named people and pets, identifiers, statements
buried in a longer message, several statements in one. Pure: no store, no model."""

from __future__ import annotations

import pytest

from langgraph_typed_memory.extraction import extract_rules
from langgraph_typed_memory.extraction.corrections import find_changes


def found(text: str, earlier: list[str] | None = None) -> list[tuple[str, str, object]]:
    return [(c.kind, c.key or c.predicate or "", c.value)
            for c in extract_rules(text, earlier=earlier or [])]


# ----------------------------------------------------------------------------- corrections

@pytest.mark.parametrize(("before", "turn", "old", "new"), [
    # both values in the turn
    ("I write my scripts in Perl.", "I switched from Perl to Go last spring.", "Perl", "Go"),
    ("My car is a Fiat Panda.", "Sorry, it's a Fiat Uno, not a Fiat Panda.", "Fiat Panda",
     "Fiat Uno"),
    ("The offsite is on 3 June.", "I said 3 June but it's actually 10 June.", "3 June",
     "10 June"),
    ("I write the scraper in Go.", "not Go, oops - Rust. the Go one is what we're retiring",
     "Go", "Rust"),
    # the old value named, the new one elsewhere in the turn
    ("I work at Contoso as a tester.", "Correction: I left Contoso. I'm at Fabrikam now.",
     "Contoso", "Fabrikam"),
    ("Please answer me in Dutch.", "ok not Dutch anymore. reply in Polish please.", "Dutch",
     None),
    # the new value after a marker, the old one by its type in the statement before
    ("Our office is in the Leeds building.", "Update: they moved us to the York building.",
     "Leeds", "York"),
    ("My dentist is Dr Alvarez.", "whoops, wrong name, it's Dr Okafor.", "Dr Alvarez",
     "Dr Okafor"),
    ("The API listens on port 8080.", "typo, it's 8081.", "8080", "8081"),
    ("We water the garden weekly.", "changed my mind, we water it daily now.", "weekly",
     "daily"),
    ("I take oat milk in my tea.", "I meant almond milk, sorry.", "oat milk", "almond milk"),
])
def test_corrections_with_a_marker(before: str, turn: str, old: str, new: str | None) -> None:
    [change] = find_changes(turn, [before])
    assert change.old == old and (new is None or change.new == new)
    assert all(c.correction for c in extract_rules(turn, earlier=[before]) if c.replaces)
    assert any(c.replaces == old for c in extract_rules(turn, earlier=[before]))


@pytest.mark.parametrize(("before", "turn", "old", "new"), [
    ("My favourite film is Alien.", "my favourite film is Arrival", "Alien", "Arrival"),
    ("The quarterly report is due on 12 March.",
     "My boss wants the quarterly report by 5 March.", "12 March", "5 March"),
    ("Our team is 12 people.", "Since the merger our team is 20 people.", "12", "20"),
    ("My phone number is 555-0100.", "my phone number is 555-0177", "555-0100", "555-0177"),
])
def test_corrections_without_a_marker(before: str, turn: str, old: str, new: str) -> None:
    [change] = find_changes(turn, [before])
    assert (change.old, change.new) == (old, new)


@pytest.mark.parametrize(("before", "turn"), [
    ("My kids love painting.", "I took my kids to the museum."),  # an event
    ("My kids go to Oakwood school.", "My kids love the beach."),  # two things said of them
    ("My family is always there for me.", "My team is like my second family."),  # another role
    ("Your help means a lot to me.", "Your advice keeps me going."),  # not the speaker's
    ("I love my dance studio's new floor.", "My dance studio is packed tonight!"),  # a reaction
    # the same word, another thing: two friends talking, nothing corrected
    ("My favorite food is papaya.", "My favorite movie is The Shawshank Redemption."),
    ("My favorite part is watching the bees work.", "My favorite food is papaya."),
    ("I wanna help make a difference.", "I want to help make that happen."),
    ("Setbacks are tough.", "It's not easy, but it's definitely worth it."),
    ("There's a new fantasy TV series coming out next month!",
     'I\'m excited to watch this new show that\'s coming out called "The Wheel of Time".'),
    ("It's nice to meet you, [user 1 name].", "You too, [user 2 name]."),
    ("I'm on the night shift at the depot.", "They put me on the day shift at the depot."),
    ("I drink my tea with lemon.", "I take my tea with honey and a dash of milk."),
])
def test_a_shared_word_alone_is_not_a_new_value(before: str, turn: str) -> None:
    assert find_changes(turn, [before]) == []


@pytest.mark.parametrize(("before", "turn", "old", "new"), [
    ("i write everything in sublime text, including notes", "caved and switched to zed",
     "sublime text", "zed"),  # what the speaker uses, not the last word
    ("I log my rides in kilometres.", "switched my bike computer over to miles bc of the club",
     "kilometres", "miles"),  # "bc" ends the new value
    ("our logs all go to elasticsearch on prem", "we moved off elastic last month",
     "elasticsearch", None),  # a short name for what was said in full
    ("i'm on windows 10 at home", "new laptop, so i'm on linux now", "windows 10", "linux"),
    ("My weekly sync with my lead is on Mondays at 3.", "she's moving it to Wednesdays",
     "Mondays", "Wednesdays"),  # she moves the user's meeting
    ("You can call me Sam.", "hmm actually please use Samantha", "Sam", "Samantha"),
    ("Our backlog review is at 11.", "update: the backlog review is at 2:30 now", "11",
     "2:30"),
    ("I plan to quote 90k for the contract.",
     "my partner says that's low, I'll quote 110k instead plus 5% expenses", "90k", "110k"),
    ("We're 40 staff across two sites.", "after the layoffs we're 32 now", "40", "32"),
    ("I coach a squad of twelve players.", "two left, so I coach a squad of ten.", "twelve",
     "ten"),
    ("My train to Leeds leaves at 8:05.", "The rail company texted: departure is 8:40.",
     "8:05", "8:40"),  # news reported after a colon
    ("The offsite is on 12 May.", "HR just emailed: we're doing 19 May instead.", "12 May",
     "19 May"),
    ("Each sprint is two weeks long.", "we changed it, sprints are now 10 days", "two weeks",
     "10 days"),
    ("the cache node is redis-eu-02", "after the incident the cache is redis-eu-05 now",
     "redis-eu-02", "redis-eu-05"),
])
def test_corrections_in_how_people_chat(before: str, turn: str, old: str,
                                        new: str | None) -> None:
    [change] = find_changes(turn, [before])
    assert change.old == old and (new is None or change.new == new)


@pytest.mark.parametrize(("before", "turn"), [
    ("Our squad uses Jira for planning.", "fyi we ditched that over the summer."),
    ("My phone's an iPhone.", "I dropped it in the lake, lol."),
    ("I use a paper planner.", "Honestly I gave up on it."),
])
def test_what_it_points_at_is_no_value_to_withdraw(before: str, turn: str) -> None:
    """"We ditched that", "I dropped it": what "it" is, the rules cannot tell (a phone
    dropped in a lake is still the phone); the turn log keeps the turn."""
    assert find_changes(turn, [before]) == []


@pytest.mark.parametrize(("before", "turn", "old", "new"), [
    ("I keep my recipes in a ring binder.", "Finally moved the recipes into a notes app.",
     "ring binder", "notes app"),  # where the thing was put
    ("Our retro is right after lunch.", "Retro got moved to late afternoon.",
     "right after lunch", "late afternoon"),  # what the thing was said to be
])
def test_where_a_moved_thing_was_before(before: str, turn: str, old: str, new: str) -> None:
    [change] = find_changes(turn, [before])
    assert (change.old, change.new) == (old, new)


def test_a_value_in_the_same_place_wins_over_a_guess_at_a_later_statement() -> None:
    earlier = ["The novel is set in a fishing village.",  # newest first, on the same topic
               "I'm drafting my novel in a notebook."]
    turn = "Finally moved the novel into a writing app, the pages kept getting wet."
    [change] = find_changes(turn, earlier)
    assert (change.old, change.new) == ("notebook", "writing app")


def test_a_withdrawal_keeps_what_else_the_turn_says() -> None:
    turn = "Sold the hatchback in May and bought a cargo bike for the school run."
    [c] = [c for c in extract_rules(turn, earlier=["I drive a hatchback."]) if c.replaces]
    assert c.replaces == "hatchback" and "hatchback" not in c.content
    assert "cargo bike" in c.content


def test_a_correction_word_is_a_marker_only_before_a_colon_or_dash() -> None:
    before = "I prefer replies written in formal British English."
    turn = "A correction to my earlier note: I prefer American English in replies."
    assert [(c.old, c.new) for c in find_changes(turn, [before])] == [
        ("British English", "American English")]


@pytest.mark.parametrize(("earlier", "turn", "value", "old"), [
    ("I'm vegetarian, for ethical reasons.", "I've gone vegan since January.", "vegan",
     "vegetarian"),
    ("I'm vegan.", "I started eating eggs again, my doctor insisted.", "eating eggs", "vegan"),
    ("I have been pescatarian for years.", "started eating chicken again last month",
     "eating chicken", "pescatarian"),
    ("My partner is vegetarian.", "I've gone vegan.", "vegan", None),  # someone else's diet
    ("I'm vegetarian.", "I started eating eggs again.", "eating eggs", None),  # it allows eggs
])
def test_a_new_diet_ends_the_one_the_speaker_had(earlier: str, turn: str, value: str,
                                                 old: str | None) -> None:
    [diet] = [c for c in extract_rules(turn, earlier=[earlier]) if c.predicate == "diet"]
    assert (diet.value, diet.replaces) == (value, old)


def test_a_typed_value_of_the_turn_points_at_the_one_it_replaces() -> None:
    before = "i swim at 7am before work, most weekdays"
    turn = "not anymore, the pool changed hours so i switched to lunchtimes, around 12:30"
    [change] = find_changes(turn, [before])
    assert change.old == "7am"


def test_a_name_to_be_addressed_by_is_the_name_preference() -> None:
    assert found("Please address me formally, Prof. Adeyemi.") == [
        ("preference", "name", "Prof. Adeyemi")]


def test_a_new_role_after_joining_is_the_occupation() -> None:
    turn = "Transfer approved — I'm joining the platform team as a site reliability engineer."
    assert ("fact", "occupation", "site reliability engineer") in found(
        turn, ["I'm a support engineer."])


@pytest.mark.parametrize(("text", "zone"), [
    ("Relocated for work, so I'm on CET now.", "CET"),
    ("my timezone is now JST", "JST"),
])
def test_a_time_zone_said_by_its_abbreviation(text: str, zone: str) -> None:
    assert ("preference", "timezone", zone) in found(text)
    assert found("I'm on PTO next week.") == []


@pytest.mark.parametrize(("before", "turn"), [
    ("I went to the cinema on Friday.", "I went to the theatre on Saturday."),  # events
    ("I love the mountains.", "I love the sea."),  # likes add up
    ("My dog's name is Rex.", "We moved to Paris."),  # another topic, another place
    ("Thanks, Mel!", "Thanks, Caroline!"),
    ("My sister lives in York.", "My brother lives in Leeds."),  # another person
    ("I've been doing yoga for two years.", "I've been learning guitar for six months."),
])
def test_no_correction_is_read_into_unrelated_statements(before: str, turn: str) -> None:
    assert find_changes(turn, [before]) == []
    assert not any(c.replaces for c in extract_rules(turn, earlier=[before]))


EARLIER = ["My sister Lena lives in Vienna.", "I live in Paris.", "We use Teams for chat."]


@pytest.mark.parametrize(("turn", "old", "new"), [
    ("I moved to Berlin last month.", None, None),  # the speaker moved, not their sister
    ("He moved to Cork.", None, None),  # a he is not the sister
    ("She just moved to Graz.", "Vienna", "Graz"),
    ("Lena moved to Graz last week.", "Vienna", "Graz"),
    ("My brother moved to Leeds.", None, None),  # another person
    ("Tom moved to Cork last month.", None, None),  # another name
])
def test_a_correction_is_about_the_one_the_earlier_statement_is_about(
        turn: str, old: str | None, new: str | None) -> None:
    changes = [(c.old, c.new) for c in find_changes(turn, EARLIER)]
    assert ("Vienna", new) in changes if old else all(o != "Vienna" for o, _ in changes)


@pytest.mark.parametrize(("before", "turn", "old", "new"), [
    ("We heat the greenhouse with a paraffin heater.",
     "We swapped that heater for a small electric fan heater.", "paraffin heater",
     "small electric fan heater"),
    ("I commute on my old road bike.", "I replaced the bike with an e-bike.", "old road bike",
     "e-bike"),
])
def test_a_correction_that_points_at_the_old_value(before: str, turn: str, old: str,
                                                   new: str) -> None:
    [change] = find_changes(turn, [before])
    assert (change.old, change.new, change.statement) == (old, new, before)


@pytest.mark.parametrize(("before", "turn", "old", "new"), [
    ("my go-to breakfast is granola w yogurt", "breakfast is eggs on toast these days",
     "granola w yogurt", "eggs on toast"),
    ("Our office dog is a beagle.", "These days the office dog is a spaniel.", "beagle",
     "spaniel"),
])
def test_one_thing_said_to_be_something_else_now(before: str, turn: str, old: str,
                                                 new: str) -> None:
    assert [(c.old, c.new) for c in find_changes(turn, [before])] == [(old, new)]


def test_a_corrected_email_is_taken_whole() -> None:
    before = "My landlord's email is rentals@kestrelprops.com, I need to ask about the lease."
    [change] = find_changes("Sorry, typo in that — it's rentals@kestrelproperties.com", [before])
    assert (change.old, change.new) == ("rentals@kestrelprops.com",
                                        "rentals@kestrelproperties.com")


def test_my_new_manager_is_my_manager() -> None:
    [fact] = extract_rules("Got reorged. My new manager is Bartholomew Quince.")
    assert (fact.predicate, fact.value) == ("manager", "Bartholomew Quince")


def test_a_correction_goes_to_the_statement_on_its_topic_before_the_one_right_before() -> None:
    earlier = ["We also moved to a new office with far better coffee.",  # the latest
               "Our team standup is first thing in the morning."]
    [change] = find_changes("Standup got pushed to late afternoon.", earlier)
    assert change.statement == earlier[1] and change.new == "late afternoon"


@pytest.mark.parametrize(("before", "turn", "old"), [
    ("I'm on the early shift at the bakery.", "My manager moved me onto the late shift.",
     "early"),  # someone else did it, to the speaker
    ("My dog eats dry kibble.", "Actually, we switched him to a raw diet.", "dry kibble"),
])
def test_a_correction_told_through_someone_else(before: str, turn: str, old: str) -> None:
    assert [old in c.old for c in find_changes(turn, [before])] == [True]


def test_a_correction_keeps_the_users_own_words() -> None:
    """The record of a change is the user's sentence, never the earlier one with a value
    swapped in ("to Life sure", "was should be")."""
    [c] = extract_rules("Small update: my team moved me to the Austin office.",
                        earlier=["I work in the Denver office, on the payments team."])
    assert (c.replaces, c.value, c.rule) == ("Denver", "Austin", "correction.replaces")
    assert c.content == "user (updated): Small update: my team moved me to the Austin office."


# ----------------------------------------------------------------------------- organisation

@pytest.mark.parametrize(("text", "predicate", "value"), [
    ("We use Grafana for monitoring.", "uses_for_monitoring", "Grafana"),
    ("We host everything on Hetzner.", "hosting", "Hetzner"),
    ("We deploy to eu-west-1.", "deploys_to", "eu-west-1"),
    ("We're on Python 3.12 everywhere.", "runs_on", "Python 3.12"),
    ("Our release ships every second Tuesday.", "release", "every second Tuesday"),
    ("The company's fiscal year starts in July.", "fiscal_year", "in July"),
])
def test_organisation_statements_are_tenant_facts(text: str, predicate: str,
                                                  value: str) -> None:
    [c] = extract_rules(text)
    assert (c.kind, c.subject, c.predicate, c.value, c.scope) == (
        "fact", "organisation", predicate, value, "tenant")


# ----------------------------------------------------------------------------- instructions

@pytest.mark.parametrize(("text", "value"), [
    ("Stop adding emojis to your replies.", "Stop adding emojis to your replies"),
    ("Please never use the word synergy.", "never use the word synergy"),
    ("Don't bother with greetings.", "Don't bother with greetings"),
    ("Going forward, please cite your sources.", "cite your sources"),
    ("I want replies to be under 100 words.", "I want replies to be under 100 words"),
])
def test_standing_instructions(text: str, value: str) -> None:
    [c] = extract_rules(text)
    assert c.kind == "preference" and c.key.startswith("instruction_") and c.value == value


@pytest.mark.parametrize(("text", "key", "value"), [
    ("on second thought give me metric", "units", "metric"),
    ("Use cups and ounces for recipes, I don't own a scale.", "units", "cups and ounces"),
    ("Actually, I'd rather you call me Robert.", "name", "Robert"),
    ("Please address me as Dr Whitcombe.", "name", "Dr Whitcombe"),
    ("change of plan: reply in Portuguese instead", "language", "Portuguese"),
    ("Please use a strictly professional tone with me.", "tone", "professional"),
    ("correction, I want ISO format, YYYY-MM-DD", "date_format", "ISO format, YYYY-MM-DD"),
    ("Please always answer me in Spanish, I'm practicing.", "language", "Spanish"),
    ("Give me temperatures in Fahrenheit please.", "temperature_units", "Fahrenheit"),
    ("wait, Celsius please", "temperature_units", "Celsius"),
])
def test_settings_phrased_many_ways(text: str, key: str, value: str) -> None:
    assert ("preference", key, value) in found(text)


# ----------------------------------------------------------------------------- people, pets

@pytest.mark.parametrize(("text", "expected"), [
    ("My brother Tom is a dentist in Cork.",
     [("fact", "brother_name", "Tom"), ("fact", "about_tom", "is a dentist in Cork")]),
    ("Our cat Pixel is diabetic.",
     [("fact", "cat_name", "Pixel"), ("fact", "about_pixel", "is diabetic")]),
    ("Had lunch with my manager Priya today.", [("fact", "manager_name", "Priya")]),
    ("My wife is called Mirela.", [("fact", "wife_name", "Mirela")]),
])
def test_named_people_and_pets(text: str, expected: list[tuple[str, str, str]]) -> None:
    assert found(text) == expected


def test_what_is_said_of_a_named_person_is_theirs() -> None:
    name, about = extract_rules("My sister Lena lives in Vienna.")
    assert (name.subject, name.stateful) == ("user", True)
    assert about.subject == "Lena" and "Vienna" in about.content


@pytest.mark.parametrize(("earlier", "turn", "predicate", "old", "new"), [
    ("My uncle Bram works as a plumber.", "Bram retrained as an electrician last year.",
     "occupation", "plumber", "electrician"),
    ("my daughter Noor lives in Ghent", "Noor moved to Utrecht for her masters.",
     "home_city", "Ghent", "Utrecht"),
    ("My friend Keiko works at Rakuten.", "Keiko joined Mercari in the spring!",
     "employer", "Rakuten", "Mercari"),
    ("My cousin Alvaro lives in Seville.", "Alvaro got a job in Madrid, he starts Monday.",
     "home_city", "Seville", "Madrid"),
])
def test_a_named_persons_job_home_and_employer_are_one_current_value_each(
        earlier: str, turn: str, predicate: str, old: str, new: str) -> None:
    said = [c for c in extract_rules(earlier) if c.predicate == predicate]
    now = [c for c in extract_rules(turn, earlier=[earlier]) if c.predicate == predicate]
    assert [(c.value, c.stateful) for c in said] == [(old, True)]
    assert [c.value for c in now] == [new]
    assert said[0].subject == now[0].subject != "user"  # the gate supersedes the old value


@pytest.mark.parametrize(("text", "value"), [
    ("I work at Volkswagen (VW).", "Volkswagen"),  # the other name is a fact of its own
    ("I work at Deutsche Bank (Frankfurt office).", "Deutsche Bank"),
])
def test_an_aside_in_parentheses_is_not_the_value(text: str, value: str) -> None:
    assert [c.value for c in extract_rules(text) if c.predicate == "employer"] == [value]


@pytest.mark.parametrize(("text", "value"), [
    ("Lena moved to Graz last week.", "Graz"),  # not "Graz la"
    ("My sister Lena moved to Graz on Monday.", "Graz"),
    ("My sister Lena moved to Rio de Janeiro in May.", "Rio de Janeiro"),
    ("My brother Tom lives in Stratford upon Avon.", "Stratford upon Avon"),
])
def test_a_persons_new_home_ends_where_the_place_name_does(text: str, value: str) -> None:
    homes = [c.value for c in extract_rules(text, earlier=["My sister Lena lives in Vienna."])
             if c.predicate == "home_city"]
    assert homes == [value]


@pytest.mark.parametrize("turn", [
    "Bram became a grandfather in May.",  # family, not a job
    "Bram is a great cook.",  # not a job frame the rules read
    "Bram Stoker moved to London in 1878.",  # a name nobody introduced
])
def test_what_is_not_a_persons_job_or_home(turn: str) -> None:
    earlier = [] if "Stoker" in turn else ["My uncle Bram works as a plumber."]
    assert not [c for c in extract_rules(turn, earlier=earlier)
                if c.predicate in ("occupation", "home_city", "employer")]


@pytest.mark.parametrize(("text", "value"), [
    ("I'm renting a studio flat in Leith.", "Leith"),
    ("We just bought a little house in Frome!", "Frome"),
    ("we finally got the keys to our new flat in Kreuzberg", "Kreuzberg"),
    ("I moved into a shared apartment in Porto last month.", "Porto"),
])
def test_where_the_user_lives_said_through_their_home(text: str, value: str) -> None:
    assert ("fact", "home_city", value) in found(text)


# ----------------------------------------------------------------------------- identifiers

@pytest.mark.parametrize(("text", "predicate", "value"), [
    ("My email is ana@example.org.", "email", "ana@example.org"),
    ("The staging db listens on 5433.", "staging_db", "5433"),
    ("My passport expires 14 March 2029.", "passport", "14 March 2029"),
    ("My budget is $2,400.", "budget", "$2,400"),
    ("My phone number is +44 20 7946 0958.", "phone_number", "+44 20 7946 0958"),
])
def test_identifiers(text: str, predicate: str, value: str) -> None:
    [c] = extract_rules(text)
    assert (c.predicate, c.value) == (predicate, value)


# ----------------------------------------------------------------------------- buried, several

def test_a_statement_buried_in_a_longer_message() -> None:
    text = ("Long week, three launches. Before I forget, some background: I teach chemistry "
            "at a sixth-form college, which is why I keep asking about titration. Anyway, "
            "can you explain buffer solutions?")
    assert ("fact", "teaches", "chemistry") in found(text)


def test_several_statements_in_one_message() -> None:
    text = "I'm Ana, I live in Porto, I work as a nurse and my husband Rui is a chef."
    assert found(text) == [
        ("fact", "name", "Ana"), ("fact", "home_city", "Porto"),
        ("fact", "occupation", "nurse"), ("fact", "husband_name", "Rui"),
        ("fact", "about_rui", "is a chef")]


@pytest.mark.parametrize("unrelated", ["Lena likes Italian food.",
                                       "Tom and Lena have a daughter called Mia."])
def test_a_move_replaces_where_a_person_lived_not_another_name_said_of_them(
        unrelated: str) -> None:
    turn = "Lena just moved to Graz."
    # the name in another place of another statement about Lena is not what moved
    assert find_changes(turn, [unrelated]) == []
    [change] = find_changes(turn, [unrelated, "My sister Lena lives in Vienna."])
    assert (change.old, change.new, change.statement) == (
        "Vienna", "Graz", "My sister Lena lives in Vienna.")

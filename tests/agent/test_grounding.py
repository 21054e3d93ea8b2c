"""The grounding check: web addresses, phone numbers and prices no tool result holds."""

from __future__ import annotations

from treadwise.agent.grounding import Invented, invented_facts

HOURS = ("TreadWise Tire Co. - Contact\nCall us on (512) 555-0142 or book at "
         "https://treadwise.example.com/book. Rotation: $40 per vehicle; balancing $1,200 "
         "for a fleet of 30.")


def test_an_answer_that_repeats_the_results_invents_nothing():
    answer = ("Call 512-555-0142 or book at treadwise.example.com/book. A rotation is 40 "
              "dollars; fleet balancing is $1200.")
    assert invented_facts(answer, [HOURS]) == []


def test_a_web_address_phone_number_and_price_the_tools_never_gave_are_flagged():
    answer = ("Yes! You can find a local service on my website at "
              "www.treadwise-tester.com/austin, call 1-800-555-0199, and it costs $99.")
    assert invented_facts(answer, [HOURS]) == [
        Invented("web address", "www.treadwise-tester.com/austin"),
        Invented("phone number", "1-800-555-0199"),
        Invented("price", "$99"),
    ]
    assert str(invented_facts("See example.org", [])[0]) == "web address 'example.org'"


def test_the_same_amount_in_another_currency_is_not_the_same_price():
    assert invented_facts("That is €40.", [HOURS]) == [Invented("price", "€40")]


def test_times_sizes_years_percentages_and_maths_are_not_phone_numbers_or_prices():
    answer = ("We are open 7:00-19:00, founded in 2016; sizes 235/70R16 to 275/55R20; "
              "15% of 240 = 36; 3.14159; 1,000,000 tires; x = 2; booked for 2026-11-23.")
    assert invented_facts(answer, []) == []


def test_the_customers_own_message_can_be_passed_as_a_source():
    question = "Can you call me back on +44 20 7946 0958?"
    answer = "Sure, we will call +44 20 7946 0958."
    assert invented_facts(answer, [question]) == []
    assert invented_facts(answer, []) == [Invented("phone number", "+44 20 7946 0958")]

"""WebShop printouts and examples, from hand-written fixtures: one run per episode, the
score line as the verdict, the notebook's step budget."""

from __future__ import annotations

from test_import_support import convert, counters, fixture, markers, tools_called

from agentdbg.importers import transcript, webshop


def test_each_episode_of_a_printout_is_a_run_with_its_instruction_as_the_task():
    name, result, runs = convert(fixture("webshop", "printout.txt"))
    assert name == "webshop"
    assert [r.info.name for r in runs] == ["episode 0", "episode 1", "episode 2"]
    assert [r.step_count for r in runs] == [5, 5, 14]
    assert runs[0].info.task == "i need a black lava stone bracelet, and price lower than 20.00 dollars"
    assert runs[0].info.policy == "recorded: ReAct WebShop run"
    assert all(r.info.guards["max_steps"] == 14 for r in runs)  # 15 actions, reset included
    assert [t["name"] for t in runs[0].info.tools] == ["search", "click"]
    first = runs[0]
    assert tools_called(first) == ["search", None, "click", "click", "click"]
    assert first.records[0].args == "black lava stone bracelet"
    assert first.records[0].call == "search[black lava stone bracelet]"
    assert first.records[1].thought.startswith("B0SICILY01 is a black lava stone bracelet")
    assert first.records[1].observation == "OK."
    assert first.records[2].observation.startswith("[Back to Search] \n[< Prev] \ncolor [black][red]")
    assert result.problems == []


def test_buying_ends_the_episode_and_the_score_is_the_verdict():
    _, _, runs = convert(fixture("webshop", "printout.txt"))
    bought, half = runs[0], runs[1]
    assert (bought.end.outcome, bought.end.answer) == ("finished", None)
    assert bought.records[-1].call == "click[Buy Now]"
    assert bought.end.verdict == {"correct": True, "score": 1.0, "expected": None, "grader": "score"}
    assert half.end.verdict == {"correct": False, "score": 0.5, "expected": None, "grader": "score"}
    # The shop refusing a click is an error observation; a think the model's length limit
    # cut before its ']' is still a think (the harness answered it OK.).
    assert markers(half) == ["", "error", "", "", ""]
    assert half.records[1].observation == "Invalid action!" and half.records[1].tool == "click"
    assert half.records[3].thought.endswith("options: '60 x 90 cm', '30 x 45")
    assert half.records[3].parse_error is None


def test_an_episode_that_never_buys_stops_on_the_step_budget_scored_0():
    _, _, runs = convert(fixture("webshop", "printout.txt"))
    stuck = runs[2]
    assert stuck.end.outcome == "budget exhausted" and stuck.end.guard == "max_steps"
    assert stuck.records[-1].tripped is not None and stuck.records[-1].guards.steps == [14, 14]
    assert stuck.end.verdict == {"correct": False, "score": 0.0, "expected": None, "grader": "score"}
    assert "scores the episode 0" in stuck.end.message
    assert counters(stuck, "repeats") == [1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 0]


def test_the_first_page_and_the_tallies_are_kept_as_raw_records():
    _, result, runs = convert(fixture("webshop", "printout.txt"))
    assert result.raw_count == 3 + 3 + 1
    page = runs[0].records[0].raw[0]
    assert page.source == "webshop page" and page.data.startswith("Webshop \nInstruction:")
    assert page.note.startswith("line 4: the shop's first page, opened by the harness's reset")
    tally = runs[0].records[-1].raw[0]
    assert tally.data == "1 1.0 1.0 0.0" and "running tally" in tally.note
    assert [r.data for r in runs[2].records[-1].raw] == ["3 0.5 0.3333333333333333 0.0",
                                                         "0.5 0.3333333333333333 0.0"]


def test_reflexion_examples_with_status_and_a_plan():
    _, result, runs = convert(fixture("webshop", "examples.txt"))
    assert [r.info.name for r in runs] == ["episode 1", "episode 2"]
    assert [r.step_count for r in runs] == [3, 4]
    assert all(r.info.guards["max_steps"] is None and r.info.policy == "WebShop example" for r in runs)
    failed, passed = runs
    assert failed.info.task == "i need a black lava stone bracelet, and price lower than 20.00 dollars"
    assert failed.records[-1].call == "click[Buy Now]" and failed.records[-1].observation is None
    assert failed.end.outcome == "finished"
    assert failed.end.verdict == {"correct": False, "score": None, "expected": None, "grader": "STATUS"}
    [plan] = [r for r in failed.records[-1].raw if r.source == "reflexion reflection"]
    assert plan.data == ("Next plan: I bought a poster instead of a bracelet. Next time I will click B0SICILY01,\n"
                         "the black bracelet, and check its price before buying.")
    assert plan.note.startswith("line 34: the agent's reflection on this attempt: Next plan:")
    assert passed.end.verdict["correct"] is True
    assert result.raw_count == 3 and result.problems == []


def test_odd_printouts_keep_what_they_hold():
    _, result, runs = convert(fixture("webshop", "edge_cases.txt"))
    assert [r.info.name for r in runs] == ["episode 1", "episode 8", "episode 9"]
    assert [r.step_count for r in runs] == [2, 4, 0]
    cut = runs[0]  # a slice that starts mid-episode: an observation with no action before it
    assert cut.records[0].tool is None and cut.records[0].observation == "You have clicked red."
    assert cut.end.outcome == "finished" and cut.end.verdict is None  # a score that is no finite number
    odd = runs[1]
    assert odd.records[0].parse_error.startswith("invalid action 'buy the bracelet'")
    assert odd.records[0].observation_error
    assert odd.records[1].tool == "exit" and odd.records[1].observation_error
    assert odd.records[3].call == "click[B0SICILY01]" and odd.records[3].observation is None
    assert odd.end.outcome == "unfinished" and odd.end.verdict is None
    empty = runs[2]
    assert empty.end.outcome == "empty" and empty.info.task == "i need a poster"
    assert [r.source for r in empty.preamble] == ["webshop page", "webshop text"]
    assert result.problems == []


def test_hostile_text_is_kept_verbatim():
    _, _, [run] = convert(fixture("webshop", "hostile_unicode.txt"))
    assert run.info.task == "i need a [bold red]lava[/bold red] bracelet for Napoli (נאפולי, 那不勒斯) \x1b[31mnow\x1b[0m"
    assert run.records[0].args == "[link=https://evil.example/]lava[/link] \x1b]52;c;ZWNobyBwd25lZA==\x07"
    assert run.records[1].thought == "[blink]buy it[/blink] — נאפולי"
    assert run.end.verdict["score"] == 0.75


def test_sniff_takes_the_shop_and_leaves_plain_transcripts_alone():
    head = fixture("webshop", "printout.txt").read_text(encoding="utf-8")
    assert webshop.sniff(head)[0]
    ok, why = transcript.sniff(head)
    assert not ok and "webshop format" in why
    plain = "Question: q\nThought: t\nAction: search[x]\nObservation: o\nFinal Answer: a\n"
    assert not webshop.sniff(plain)[0] and transcript.sniff(plain)[0]
    assert webshop.sniff("Instruction:\ni need socks\n[Search]\n\nAction: search[socks]\n")[0]
    assert not webshop.sniff('{"Action: reset": 1}')[0]


def test_each_reset_opens_an_episode_even_without_the_dashes():
    page = "Observation: \nWebshop \nInstruction:  \n{} \n[Search] \n\n"
    text = ("Action: reset\n" + page.format("i need socks") + "Action: search[socks]\nObservation: ok\n\n"
            + "Action: reset\n" + page.format("i need a hat") + "Action: search[hat]\nObservation: ok\n\n")
    result = webshop.convert(text, "resets")
    assert [events[0].task for events in result.runs] == ["i need socks", "i need a hat"]
    assert [events[0].name for events in result.runs] == ["episode 1", "episode 2"]

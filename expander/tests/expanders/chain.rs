use std::collections::BTreeSet;

use expander::{Expander, ExpanderContext, ExpanderError, ExpanderName};
use simulator::testing;

use crate::common::{ctx, option, pods, simple_option};

#[test]
fn chain_parses_names_in_order() {
    let expander = Expander::new("priority, least-waste ,random").unwrap();
    assert_eq!(expander.names(), [ExpanderName::Priority, ExpanderName::LeastWaste, ExpanderName::Random]);
    for name in ExpanderName::ALL {
        assert_eq!(Expander::new(name.as_str()).unwrap().names(), [name]);
    }
    // least-nodes is accepted although upstream leaves it out of the flag's help text.
    assert!(Expander::new("least-nodes").is_ok());
}

#[test]
fn unknown_expander_error() {
    let error = Expander::new("least-waste,cheapest").unwrap_err();
    assert_eq!(error, ExpanderError::UnknownExpander { name: "cheapest".into() });
    assert!(error.to_string().starts_with("Expander cheapest not supported"));
}

#[test]
fn grpc_is_a_filter_like_upstreams() {
    // A filter: it may come anywhere and be followed by others, but not after random, nor twice.
    let expander = Expander::new("priority,grpc,least-waste").unwrap();
    assert_eq!(expander.names(), [ExpanderName::Priority, ExpanderName::Grpc, ExpanderName::LeastWaste]);
    assert!(Expander::new("grpc,random").is_ok());
    assert!(matches!(Expander::new("random,grpc"), Err(ExpanderError::ExpanderAfterStrategy { .. })));
    assert_eq!(Expander::new("grpc,grpc").unwrap_err(), ExpanderError::DuplicateExpander { name: "grpc".into() });
}

#[test]
fn a_grpc_step_without_a_backend_passes_every_option() {
    let options = vec![simple_option("a", 1, 1), simple_option("b", 1, 1)];
    let decision = Expander::with_seed("grpc", 3).unwrap().best_option(&options, &ctx(None, 3));
    assert_eq!(decision.trace[0].expander, ExpanderName::Grpc);
    assert_eq!(decision.trace[0].kept, vec![0, 1]);
    assert!(decision.chosen.is_some());
}

#[test]
fn empty_expander_list_error() {
    assert_eq!(Expander::new("").unwrap_err(), ExpanderError::EmptyExpanderList);
    assert_eq!(Expander::new("  ").unwrap_err(), ExpanderError::EmptyExpanderList);
    assert!(matches!(Expander::new("priority,,random"), Err(ExpanderError::EmptyExpanderName { .. })));
}

#[test]
fn chain_rejects_duplicates() {
    let error = Expander::new("least-waste,priority,least-waste").unwrap_err();
    assert_eq!(error, ExpanderError::DuplicateExpander { name: "least-waste".into() });
    assert_eq!(
        error.to_string(),
        "Expander least-waste was specified multiple times, each expander must not be specified more than once"
    );
}

#[test]
fn chain_rejects_strategy_not_last() {
    let error = Expander::new("random,least-waste").unwrap_err();
    assert_eq!(error, ExpanderError::ExpanderAfterStrategy { name: "least-waste".into(), previous: "random".into() });
    assert_eq!(
        error.to_string(),
        "Expander least-waste came after an expander random that will always return only one result, \
         this is not allowed since least-waste will never be used"
    );
    // Even an unknown name after random is reported as unreachable first, as upstream checks.
    assert!(matches!(Expander::new("random,nope"), Err(ExpanderError::ExpanderAfterStrategy { .. })));
    // Random last is fine.
    assert!(Expander::new("priority,random").is_ok());
}

#[test]
fn chain_stops_when_one_left() {
    // least-nodes leaves one option, so priority never runs: its invalid config raises no event.
    let options = vec![simple_option("one", 1, 1), simple_option("two", 2, 1)];
    let mut expander = Expander::with_seed("least-nodes,priority", 1).unwrap();
    let ctx = ExpanderContext { priority_config: Some("not: [valid"), ..ctx(None, 3) };
    let decision = expander.best_option(&options, &ctx);
    assert_eq!(decision.chosen, Some(0));
    assert!(decision.events.is_empty());
    assert_eq!(decision.trace.len(), 1);
    assert_eq!(decision.trace[0].expander, ExpanderName::LeastNodes);
}

#[test]
fn chain_narrows_in_order() {
    // priority keeps the two "preferred" groups; least-waste then picks among them even though
    // the third group would waste less.
    let work = || pods("p", 4, "1", "1Gi");
    let options = vec![
        option("preferred-big", testing::node("a", "16", "16Gi"), 1, work()),
        option("other-exact", testing::node("b", "4", "4Gi"), 1, work()),
        option("preferred-medium", testing::node("c", "8", "8Gi"), 1, work()),
    ];
    let mut expander = Expander::with_seed("priority,least-waste", 1).unwrap();
    let ctx = ExpanderContext { priority_config: Some("10: [preferred]"), ..ctx(None, 3) };
    let decision = expander.best_option(&options, &ctx);
    assert_eq!(decision.chosen, Some(2));
    assert_eq!(decision.trace[0].kept, vec![0, 2]);
    assert_eq!(decision.trace[1].kept, vec![2]);
    // least-waste only scored what priority kept.
    assert_eq!(decision.trace[1].scores.iter().map(|(i, _)| *i).collect::<Vec<_>>(), vec![0, 2]);
    assert_eq!(decision.events.len(), 1, "one 'not matched' event for other-exact");
}

#[test]
fn chain_random_breaks_final_ties() {
    // Three options tie under most-pods; the fourth helps fewer pods.
    let options = vec![
        simple_option("a", 1, 5),
        simple_option("b", 1, 5),
        simple_option("fewer", 1, 2),
        simple_option("c", 1, 5),
    ];
    let tied = [0, 1, 3];
    let mut picks = BTreeSet::new();
    for seed in 0..64 {
        let decision = Expander::with_seed("most-pods", seed).unwrap().best_option(&options, &ctx(None, 3));
        let chosen = decision.chosen.unwrap();
        assert!(tied.contains(&chosen), "seed {seed} chose {chosen}");
        let last = decision.trace.last().unwrap();
        assert!(last.final_tie_break && last.expander == ExpanderName::Random && last.kept == vec![chosen]);
        picks.insert(chosen);
    }
    assert!(picks.len() > 1, "different seeds should be able to pick different options: {picks:?}");
}

#[test]
fn chain_same_seed_same_choices() {
    let options: Vec<_> = (0..10).map(|i| simple_option(&format!("g{i}"), 1, 1)).collect();
    let run = |seed| {
        let mut expander = Expander::with_seed("random", seed).unwrap();
        (0..20).map(|_| expander.best_option(&options, &ctx(None, 3)).chosen.unwrap()).collect::<Vec<_>>()
    };
    assert_eq!(run(42), run(42));
}

#[test]
fn random_alone_can_pick_any_option() {
    let options: Vec<_> = (0..4).map(|i| simple_option(&format!("g{i}"), 1, i + 1)).collect();
    let mut expander = Expander::with_seed("random", 9).unwrap();
    let picks: BTreeSet<_> = (0..200).map(|_| expander.best_option(&options, &ctx(None, 3)).chosen.unwrap()).collect();
    assert_eq!(picks, BTreeSet::from([0, 1, 2, 3]));
}

#[test]
fn chain_filter_keeping_nothing_chooses_nothing() {
    // least-nodes ignores zero-node options; with only those, nothing is chosen (as upstream).
    let options = vec![simple_option("a", 0, 1), simple_option("b", 0, 1)];
    let mut expander = Expander::with_seed("least-nodes,most-pods", 1).unwrap();
    let decision = expander.best_option(&options, &ctx(None, 3));
    assert_eq!(decision.chosen, None);
    assert_eq!(decision.trace.len(), 1);
}

#[test]
fn no_options_no_choice() {
    let mut expander = Expander::new("least-waste").unwrap();
    let decision = expander.best_option(&[], &ctx(None, 3));
    assert_eq!(decision.chosen, None);
    assert!(decision.events.is_empty() && decision.trace.is_empty());
}

#[test]
fn single_option_still_runs_the_first_expander() {
    // Upstream calls the first filter before checking for a single option, so a lone unmatched
    // group still produces the priority warnings (and is still chosen).
    let options = vec![simple_option("lonely", 1, 1)];
    let mut expander = Expander::with_seed("priority", 1).unwrap();
    let ctx = ExpanderContext { priority_config: Some("10: [other]"), ..ctx(None, 3) };
    let decision = expander.best_option(&options, &ctx);
    assert_eq!(decision.chosen, Some(0));
    assert_eq!(decision.events.len(), 2);
}

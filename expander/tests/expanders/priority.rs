use expander::priority::{
    PRIORITY_CONFIG_MAP_INVALID, PRIORITY_CONFIG_MAP_NO_GROUP_MATCHED, PRIORITY_CONFIG_MAP_NOT_MATCHED_GROUP,
};
use expander::{Expander, ExpanderContext, ExpanderError, ExpansionOption, PriorityConfig, priority};

use crate::common::{ctx, simple_option};

const CONFIG: &str = r#"
5:
  - ".*t2\\.micro.*"
10:
  - ".*t2\\.large.*"
  - ".*t3\\.large.*"
50:
  - ".*m4\\.4xlarge.*"
"#;

fn options(ids: &[&str]) -> Vec<ExpansionOption> {
    ids.iter().map(|id| simple_option(id, 1, 1)).collect()
}

fn with_priorities(config: &str) -> ExpanderContext<'_> {
    ExpanderContext { priority_config: Some(config), priority_config_map_exists: true, ..ctx(None, 3) }
}

#[test]
fn priority_highest_matching_wins() {
    let config = PriorityConfig::parse(CONFIG).unwrap();
    let (kept, events) = priority(&options(&["my-asg.t2.large", "my-asg.m4.4xlarge", "my-asg.t2.micro"]), &config);
    assert_eq!(kept, vec![1]);
    assert!(events.is_empty());

    // Two groups at the same, highest priority are both kept.
    let (kept, _) = priority(&options(&["my-asg.t2.large", "my-asg.t3.large", "my-asg.t2.micro"]), &config);
    assert_eq!(kept, vec![0, 1]);
}

#[test]
fn priority_group_counts_at_its_highest_matching_priority() {
    // Everything matches 5; the large group also matches 10 and wins.
    let config = PriorityConfig::parse("5:\n  - \".*\"\n10:\n  - \".t2\\\\.large.*\"\n").unwrap();
    let (kept, events) = priority(&options(&["my-asg.t2.micro", "my-asg.t2.large"]), &config);
    assert_eq!(kept, vec![1]);
    assert!(events.is_empty());
    assert_eq!(config.priority_of("my-asg.t2.large"), Some(10));
    assert_eq!(config.priority_of("my-asg.t2.micro"), Some(5));
}

#[test]
fn priority_regex_is_unanchored() {
    let config = PriorityConfig::parse("10: [large]\n20: ['^spot$']").unwrap();
    assert_eq!(config.priority_of("pool-large-a"), Some(10));
    assert_eq!(config.priority_of("my-spot-pool"), None);
    assert_eq!(config.priority_of("spot"), Some(20));
    let (kept, _) = priority(&options(&["pool-small", "pool-large-a"]), &config);
    assert_eq!(kept, vec![1]);
}

#[test]
fn priority_unmatched_groups_dropped_with_event() {
    let config = PriorityConfig::parse("10:\n  - \".*t2\\\\.large.*\"\n").unwrap();
    let (kept, events) = priority(&options(&["my-asg.t2.large", "my-asg.t3.large", "my-asg.m4.4xlarge"]), &config);
    assert_eq!(kept, vec![0]);
    let expected: Vec<_> = ["my-asg.t3.large", "my-asg.m4.4xlarge"]
        .iter()
        .map(|id| {
            format!(
                "Priority expander: node group {id} not found in priority expander configuration. \
                 The group won't be used."
            )
        })
        .collect();
    assert_eq!(events.iter().map(|e| e.message.clone()).collect::<Vec<_>>(), expected);
    assert!(events.iter().all(|e| e.reason == PRIORITY_CONFIG_MAP_NOT_MATCHED_GROUP && e.warning));
}

#[test]
fn priority_no_match_passes_all() {
    let config = PriorityConfig::parse("5:\n  - \".*t\\\\.micro.*\"\n10:\n  - \".*t\\\\.large.*\"\n").unwrap();
    let (kept, events) = priority(&options(&["my-asg.t2.large", "my-asg.t3.large"]), &config);
    assert_eq!(kept, vec![0, 1]);
    let reasons: Vec<_> = events.iter().map(|e| e.reason).collect();
    assert_eq!(
        reasons,
        [
            PRIORITY_CONFIG_MAP_NOT_MATCHED_GROUP,
            PRIORITY_CONFIG_MAP_NOT_MATCHED_GROUP,
            PRIORITY_CONFIG_MAP_NO_GROUP_MATCHED
        ]
    );
    assert_eq!(
        events[2].message,
        "Priority expander: no priorities info found for any of the expansion options. Falling back to random choice."
    );
}

#[test]
fn priority_below_minus_one_never_wins() {
    let config = PriorityConfig::parse("-5: [low]\n-1: [minus-one]").unwrap();
    // −1 is still a winning priority.
    let (kept, events) = priority(&options(&["a-low", "b-minus-one"]), &config);
    assert_eq!(kept, vec![1]);
    assert!(events.is_empty());

    // Only groups below −1: they matched (no "not matched" event) but none wins, so all pass.
    let (kept, events) = priority(&options(&["a-low", "b-low"]), &config);
    assert_eq!(kept, vec![0, 1]);
    assert_eq!(events.iter().map(|e| e.reason).collect::<Vec<_>>(), [PRIORITY_CONFIG_MAP_NO_GROUP_MATCHED]);

    // A group below −1 is dropped in favour of one at −1, and an unmatched one with an event.
    let (kept, events) = priority(&options(&["a-low", "b-minus-one", "c-other"]), &config);
    assert_eq!(kept, vec![1]);
    assert_eq!(events.iter().map(|e| e.reason).collect::<Vec<_>>(), [PRIORITY_CONFIG_MAP_NOT_MATCHED_GROUP]);
}

#[test]
fn priority_invalid_config_passes_all() {
    let options = options(&["my-asg.t2.large", "my-asg.m4.4xlarge"]);
    let mut expander = Expander::with_seed("priority,least-nodes", 1).unwrap();
    for bad in ["", "10: [\"(unclosed\"]", "- just\n- a list\n"] {
        let decision = expander.best_option(&options, &with_priorities(bad));
        // Both options reach least-nodes (they tie there) and the final random pick.
        assert_eq!(decision.trace[0].kept, vec![0, 1], "config {bad:?}");
        assert!(decision.chosen.is_some());
        assert_eq!(decision.events.len(), 1);
        assert_eq!(decision.events[0].reason, PRIORITY_CONFIG_MAP_INVALID);
        assert!(decision.events[0].warning);
        let error = PriorityConfig::parse(bad).unwrap_err();
        assert_eq!(
            decision.events[0].message,
            format!("Wrong configuration for priority expander: {error}. Ignoring update.")
        );
    }
    // Upstream's exact message for an empty configuration.
    let decision = expander.best_option(&options, &with_priorities(""));
    assert_eq!(
        decision.events[0].message,
        "Wrong configuration for priority expander: priority configuration in \
         cluster-autoscaler-priority-expander configmap is empty; please provide valid configuration. Ignoring update."
    );
}

#[test]
fn priority_config_map_without_key_warns_and_passes_all() {
    let options = options(&["a", "b"]);
    let mut expander = Expander::with_seed("priority,least-nodes", 1).unwrap();
    let ctx = ExpanderContext { priority_config: None, priority_config_map_exists: true, ..ctx(None, 3) };
    let decision = expander.best_option(&options, &ctx);
    assert_eq!(decision.trace[0].kept, vec![0, 1]);
    assert_eq!(decision.events.len(), 1);
    assert_eq!(decision.events[0].reason, PRIORITY_CONFIG_MAP_INVALID);
    assert_eq!(
        decision.events[0].message,
        "Wrong configmap for priority expander, doesn't contain priorities key. Ignoring update."
    );
}

#[test]
fn priority_missing_config_map_passes_all_silently() {
    let options = options(&["a", "b"]);
    let mut expander = Expander::with_seed("priority,least-nodes", 1).unwrap();
    let decision = expander.best_option(&options, &ctx(None, 3));
    assert_eq!(decision.trace[0].kept, vec![0, 1]);
    assert!(decision.events.is_empty());
}

#[test]
fn priority_config_changes_take_effect() {
    let options = options(&["my-asg.t2.large", "my-asg.t3.large", "my-asg.m4.4xlarge"]);
    let mut expander = Expander::with_seed("priority", 3).unwrap();
    let one_entry = "10:\n  - \".*t2\\\\.large.*\"\n";
    let decision = expander.best_option(&options, &with_priorities(one_entry));
    assert_eq!(decision.chosen, Some(0));
    assert_eq!(decision.events.len(), 2);
    // Same text again: same answer and the same events (events are per call, not per parse).
    let again = expander.best_option(&options, &with_priorities(one_entry));
    assert_eq!(again, decision);

    let decision = expander.best_option(&options, &with_priorities(CONFIG));
    assert_eq!(decision.chosen, Some(2));
    assert!(decision.events.is_empty());
}

#[test]
fn priority_config_reads_upstream_yaml_forms() {
    // Empty document or comments only: no priorities (so nothing matches).
    for empty in ["# nothing yet\n", "~", "{}"] {
        assert_eq!(PriorityConfig::parse(empty).unwrap().levels().count(), 0, "{empty:?}");
    }
    // A priority without rules, flow lists, negative priorities, scalars taken as written.
    let config = PriorityConfig::parse("1:\n2: [a, 'b']\n-3: [1e3, true]\n").unwrap();
    let levels: Vec<(i64, Vec<String>)> =
        config.levels().map(|(p, r)| (p, r.iter().map(|r| r.as_str().to_string()).collect())).collect();
    assert_eq!(
        levels,
        vec![
            (-3, vec!["1e3".to_string(), "true".to_string()]),
            (1, vec![]),
            (2, vec!["a".to_string(), "b".to_string()])
        ]
    );
    // A repeated priority: the later list replaces the earlier, as upstream's decoder does.
    let config = PriorityConfig::parse("10: [a]\n10: [b]\n").unwrap();
    assert_eq!(config.priority_of("a"), None);
    assert_eq!(config.priority_of("b"), Some(10));
}

#[test]
fn priority_config_errors_say_what_is_wrong() {
    let yaml_error = |text: &str| match PriorityConfig::parse(text) {
        Err(ExpanderError::PriorityConfigYaml(message)) => message,
        other => panic!("{text:?}: expected a YAML error, got {other:?}"),
    };
    assert!(yaml_error("- a\n- b\n").contains("expected a map from integer priority to a list of regular expressions"));
    assert!(yaml_error("just text").contains("expected a map from integer priority"));
    assert!(yaml_error("\"10\": [a]").contains("priority \"10\" is a string, not an integer"));
    assert!(yaml_error("high: [a]").contains("priority \"high\" is a string, not an integer"));
    assert!(yaml_error("1.5: [a]").contains("priority 1.5 is not an integer"));
    assert!(yaml_error("10: a").contains("a list of regular expressions for priority 10"));
    assert!(yaml_error("10: [[a]]").contains("line 1"));
    assert!(yaml_error("10: [a\n").contains("line"));

    let error = PriorityConfig::parse("5: [ok]\n10:\n  - good\n  - \"bad(\"\n").unwrap_err();
    assert!(
        matches!(&error, ExpanderError::PriorityConfigRegex { priority: 10, regex, .. } if regex == "bad("),
        "{error:?}"
    );
    assert!(error.to_string().starts_with("Can't compile regexp rule for priority 10 and rule bad(: "));
    assert_eq!(PriorityConfig::parse("").unwrap_err(), ExpanderError::PriorityConfigEmpty);
    assert!(ExpanderError::PriorityConfigYaml("x".into()).to_string().starts_with("Can't parse YAML with priorities"));
}

#[test]
fn priority_rules_share_one_memory_limit() {
    // Found by the readers' fuzz test: each rule was compiled alone, and `\w{100}` alone takes
    // about 6 MiB (every Unicode word character, a hundred times), so a ConfigMap of a few
    // kilobytes could grow the autoscaler by gigabytes. Eight such rules exceed the limit.
    let heavy: String = (0..8).map(|i| format!("  - '\\w{{100}}-{i}'\n")).collect();
    let error = PriorityConfig::parse(&format!("10:\n{heavy}")).unwrap_err();
    assert!(matches!(&error, ExpanderError::PriorityConfigRules { .. }), "{error:?}");
    assert!(error.to_string().starts_with("Can't compile the regexp rules together: "), "{error}");
    // One alone is fine, and so are thousands of light rules (one per node group).
    assert!(PriorityConfig::parse("10:\n  - '\\w{100}'\n").is_ok());
    let many: String = (0..3000).map(|i| format!("  - '^pool-{i}$'\n")).collect();
    let config = PriorityConfig::parse(&format!("5:\n{many}20:\n  - pool-1\n")).unwrap();
    assert_eq!(config.priority_of("pool-2999"), Some(5));
    assert_eq!(config.priority_of("pool-17"), Some(20), "the highest matching priority wins");
    assert_eq!(config.priority_of("other"), None);
}

#[test]
fn priority_rules_have_a_length_limit() {
    // Found by the readers' fuzz test: a 500 KB rule (a character class) took 160 MiB to parse.
    let long = format!("[{}]", "ab".repeat(9000));
    let error = PriorityConfig::parse(&format!("5: [ok]\n7:\n  - '{long}'\n")).unwrap_err();
    assert!(matches!(&error, ExpanderError::PriorityConfigRegex { priority: 7, .. }), "{error:?}");
    assert!(error.to_string().contains("18002 bytes long, longer than 16384"), "{error}");
    assert!(error.to_string().len() < 300, "the rule is shortened in the message: {error}");
    // Just under the limit: read.
    let config = PriorityConfig::parse(&format!("7:\n  - '[{}]'\n", "ab".repeat(8000))).unwrap();
    assert_eq!(config.priority_of("b"), Some(7));
}

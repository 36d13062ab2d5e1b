//! The `--events` file: the timeline as JSON lines, with repeated Kubernetes Events aggregated
//! as the API server stores them. A pod that stays pending gets the same `NotTriggerScaleUp`
//! every loop; client-go's correlator turns those into one Event whose `count` grows and whose
//! `lastTimestamp` moves, so a reader sees one line per distinct event, not thousands.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::driver::TimelineEntry;

/// What makes two events the same event: the object, the type, the reason and the message.
fn event_key(details: &Value) -> Option<String> {
    let object = details.get("involvedObject")?;
    Some(format!(
        "{}\u{0}{}\u{0}{}\u{0}{}",
        object,
        details.get("type").and_then(Value::as_str).unwrap_or(""),
        details.get("reason").and_then(Value::as_str).unwrap_or(""),
        details.get("message").and_then(Value::as_str).unwrap_or("")
    ))
}

/// The timeline as lines to write: every entry in time order, except that an event repeating an
/// earlier one (same object, type, reason and message) only raises that one's `count` and
/// `lastTimestamp`. The aggregated line stands where the event first happened.
pub fn lines(timeline: &[TimelineEntry]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(timeline.len());
    let mut seen: HashMap<String, usize> = HashMap::new();
    for entry in timeline {
        let key = (entry.kind == "event").then(|| event_key(&entry.details)).flatten();
        if let Some(key) = key {
            if let Some(&index) = seen.get(&key) {
                let details = &mut out[index]["details"];
                let count = details["count"].as_u64().unwrap_or(1) + 1;
                details["count"] = json!(count);
                details["lastTimestamp"] = json!(entry.time);
                continue;
            }
            seen.insert(key, out.len());
            let mut details = entry.details.clone();
            if let Some(map) = details.as_object_mut() {
                map.insert("count".into(), json!(1));
                map.insert("firstTimestamp".into(), json!(entry.time));
                map.insert("lastTimestamp".into(), json!(entry.time));
            }
            out.push(json!({"time": entry.time, "at": entry.at, "kind": entry.kind, "details": details}));
            continue;
        }
        out.push(serde_json::to_value(entry).expect("timeline entries serialize"));
    }
    out
}

/// The `--events` file's text: one JSON document per line.
pub fn file(timeline: &[TimelineEntry]) -> String {
    let mut text = String::new();
    for line in lines(timeline) {
        text.push_str(&line.to_string());
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(at: f64, name: &str, reason: &str, message: &str) -> TimelineEntry {
        TimelineEntry {
            time: format!("t{at}"),
            at,
            kind: "event",
            details: json!({
                "involvedObject": {"kind": "Pod", "namespace": "shop", "name": name},
                "type": "Normal", "reason": reason, "message": message,
            }),
        }
    }

    #[test]
    fn repeated_events_become_one_line_with_count_and_first_and_last_time() {
        let timeline = vec![
            event(10.0, "web-1", "NotTriggerScaleUp", "pod didn't trigger scale-up"),
            TimelineEntry { time: "t15".into(), at: 15.0, kind: "scaleUp", details: json!({"nodeGroup": "general"}) },
            event(20.0, "web-1", "NotTriggerScaleUp", "pod didn't trigger scale-up"),
            event(30.0, "web-2", "NotTriggerScaleUp", "pod didn't trigger scale-up"),
            event(40.0, "web-1", "NotTriggerScaleUp", "another message"),
            event(50.0, "web-1", "NotTriggerScaleUp", "pod didn't trigger scale-up"),
        ];
        let lines = lines(&timeline);
        assert_eq!(lines.len(), 4, "{lines:#?}");
        let first = &lines[0]["details"];
        assert_eq!((first["count"].as_u64(), first["firstTimestamp"].as_str()), (Some(3), Some("t10")));
        assert_eq!(first["lastTimestamp"], "t50");
        assert_eq!(lines[1]["kind"], "scaleUp");
        assert_eq!(lines[2]["details"]["count"], 1);
        assert_eq!(lines[3]["details"]["message"], "another message");
        assert_eq!(file(&timeline).lines().count(), 4);
    }
}

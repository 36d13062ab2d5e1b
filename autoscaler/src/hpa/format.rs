//! Text exactly as the Go controllers print it.
//!
//! Event messages, condition messages and metric names of kube-controller-manager and of the
//! WPA controller embed Go renderings of quantities, label selectors, maps and times. Users
//! (and tests comparing with upstream) see those strings, so they are reproduced here.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::jiff::Timestamp;
use simulator::labels::{Requirement, Selector};

/// `resource.NewMilliQuantity(milli, resource.DecimalSI)` in its canonical string form:
/// the largest decimal SI suffix that keeps the mantissa an integer (`1500m`, `2`, `3k`).
pub fn milli_quantity(milli: i64) -> Quantity {
    Quantity(format_decimal_milli(milli))
}

pub fn format_decimal_milli(milli: i64) -> String {
    if milli == 0 {
        return "0".to_string();
    }
    let mut mantissa = i128::from(milli);
    let mut exponent = -3;
    while mantissa % 1000 == 0 && exponent < 18 {
        mantissa /= 1000;
        exponent += 3;
    }
    let suffix = match exponent {
        -3 => "m",
        0 => "",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        _ => "E",
    };
    format!("{mantissa}{suffix}")
}

/// `%+v` of a `*metav1.LabelSelector` (its generated `String()` method); `nil` when absent.
pub fn go_label_selector(selector: Option<&LabelSelector>) -> String {
    let Some(selector) = selector else { return "nil".to_string() };
    let mut labels = String::from("map[string]string{");
    for (key, value) in selector.match_labels.iter().flatten() {
        labels.push_str(&format!("{key}: {value},"));
    }
    labels.push('}');
    let mut expressions = String::from("[]LabelSelectorRequirement{");
    for requirement in selector.match_expressions.iter().flatten() {
        let values = requirement.values.as_deref().unwrap_or(&[]).join(" ");
        expressions.push_str(&format!(
            "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{values}],}},",
            requirement.key, requirement.operator
        ));
    }
    expressions.push('}');
    format!("&LabelSelector{{MatchLabels:{labels},MatchExpressions:{expressions},}}")
}

/// `%v` of a Go `map[string]string` (keys sorted): `map[a:1 b:2]`.
pub fn go_string_map(map: Option<&BTreeMap<String, String>>) -> String {
    let entries: Vec<String> = map.into_iter().flatten().map(|(k, v)| format!("{k}:{v}")).collect();
    format!("map[{}]", entries.join(" "))
}

/// `%v` of a `*metav1.Time` as read back from the API (UTC): `2019-08-20 18:57:44 +0000 UTC`,
/// `<nil>` when absent.
pub fn go_time(time: Option<Timestamp>) -> String {
    let Some(time) = time else { return "<nil>".to_string() };
    let mut text = time.strftime("%Y-%m-%d %H:%M:%S").to_string();
    let nanos = time.subsec_nanosecond();
    if nanos > 0 {
        let fraction = format!("{nanos:09}");
        text.push('.');
        text.push_str(fraction.trim_end_matches('0'));
    }
    text.push_str(" +0000 UTC");
    text
}

/// `labels.Selector.String()`: requirements sorted by key, `k=v`, `k in (a,b)`, `k notin (a,b)`,
/// `k`, `!k`, joined by commas.
pub fn selector_string(selector: &Selector) -> String {
    let Selector::All(requirements) = selector else { return String::new() };
    let mut parts: Vec<(&str, String)> = requirements
        .iter()
        .map(|requirement| {
            let text = match requirement {
                Requirement::In(k, vs) if vs.len() == 1 => format!("{k}={}", vs[0]),
                Requirement::In(k, vs) => format!("{k} in ({})", vs.join(",")),
                Requirement::NotIn(k, vs) => format!("{k} notin ({})", vs.join(",")),
                Requirement::Exists(k) => k.clone(),
                Requirement::DoesNotExist(k) => format!("!{k}"),
                Requirement::Gt(k, n) => format!("{k}>{n}"),
                Requirement::Lt(k, n) => format!("{k}<{n}"),
            };
            (requirement.key(), text)
        })
        .collect();
    parts.sort();
    parts.into_iter().map(|(_, text)| text).collect::<Vec<_>>().join(",")
}

/// `Quantity.AsApproximateFloat64()`: the quantity as a float, `None` when it does not parse.
pub fn quantity_as_f64(quantity: &Quantity) -> Option<f64> {
    cloudprovider::quantity::quantity_value(quantity.0.trim()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    #[test]
    fn decimal_milli_quantities_use_the_largest_exact_suffix() {
        assert_eq!(format_decimal_milli(0), "0");
        assert_eq!(format_decimal_milli(500), "500m");
        assert_eq!(format_decimal_milli(1500), "1500m");
        assert_eq!(format_decimal_milli(2000), "2");
        assert_eq!(format_decimal_milli(2_000_000), "2k");
        assert_eq!(format_decimal_milli(104_857_600_000), "104857600");
        assert_eq!(format_decimal_milli(-250), "-250m");
    }

    #[test]
    fn label_selector_renders_like_gogo_string() {
        let selector = LabelSelector {
            match_labels: Some([("queue".to_string(), "worker_tasks".to_string())].into()),
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "tier".into(),
                operator: "In".into(),
                values: Some(vec!["a".into(), "b".into()]),
            }]),
        };
        assert_eq!(
            go_label_selector(Some(&selector)),
            "&LabelSelector{MatchLabels:map[string]string{queue: worker_tasks,},MatchExpressions:\
             []LabelSelectorRequirement{LabelSelectorRequirement{Key:tier,Operator:In,Values:[a b],},},}"
        );
        assert_eq!(go_label_selector(None), "nil");
    }

    #[test]
    fn go_map_and_time_renderings() {
        let map: BTreeMap<String, String> = [("b".into(), "2".into()), ("a".into(), "1".into())].into();
        assert_eq!(go_string_map(Some(&map)), "map[a:1 b:2]");
        assert_eq!(go_string_map(None), "map[]");
        let t: Timestamp = "2019-08-20T18:57:44Z".parse().unwrap();
        assert_eq!(go_time(Some(t)), "2019-08-20 18:57:44 +0000 UTC");
        let t: Timestamp = "2019-08-20T18:57:44.5Z".parse().unwrap();
        assert_eq!(go_time(Some(t)), "2019-08-20 18:57:44.5 +0000 UTC");
        assert_eq!(go_time(None), "<nil>");
    }

    #[test]
    fn quantities_convert_to_approximate_floats() {
        let q = |s: &str| quantity_as_f64(&Quantity(s.to_string()));
        assert_eq!(q("0.05"), Some(0.05));
        assert_eq!(q("50m"), Some(0.05));
        assert_eq!(q("5e-2"), Some(0.05));
        assert_eq!(q("1Ki"), Some(1024.0));
        assert_eq!(q("2k"), Some(2000.0));
        assert_eq!(q("abc"), None);
    }
}

//! The `reference_copy` study: a copy of the reference file found beside
//! the repository (`shared/references/closed_form.json`, see
//! [`shared_copy_path`]) against the project's own,
//! number by number. The copy is never used in place of the project's file.

use crate::references::{load_references, parse_cases, reference_error, shared_copy_path};
use crate::studies::report::Row;

/// Every number of `shared` against the same entry of the project's file
/// (they must be equal; the row shows the largest relative difference,
/// absolute below 1e-3): one row per case, or one info row
/// when there is no shared copy. A case or entry present in one file only is
/// a failure.
pub fn compare_shared_copy(shared: &str) -> Vec<Row> {
    let study = "reference_copy";
    let (ours, theirs) = match (load_references(), parse_cases(shared, "the shared copy")) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            return vec![Row::failure(study, "closed_form.json", "load", e)]
        }
    };
    let mut rows = Vec::new();
    for name in ours
        .keys()
        .chain(theirs.keys().filter(|k| !ours.contains_key(*k)))
    {
        let (Some(a), Some(b)) = (ours.get(name), theirs.get(name)) else {
            rows.push(Row::failure(
                study,
                name,
                "case",
                "present in one file only",
            ));
            continue;
        };
        let (pa, pb) = (a.numbers(), b.numbers());
        if pa.len() != pb.len() || pa.iter().zip(&pb).any(|(x, y)| x.0 != y.0) {
            rows.push(Row::failure(
                study,
                name,
                "entries",
                "the two files name different entries",
            ));
            continue;
        }
        let (worst, error) = pa
            .iter()
            .zip(&pb)
            .map(|(x, y)| (x.0.clone(), reference_error(y.1, x.1, 1e-3)))
            .fold((String::new(), 0.0), |w, e| {
                if e.1 > w.1 || w.0.is_empty() {
                    e
                } else {
                    w
                }
            });
        rows.push(Row::check(
            study,
            name,
            if error == 0.0 {
                format!("shared copy: all {} numbers equal", pa.len())
            } else {
                format!("shared copy differs, worst: {worst}")
            },
            f64::NAN,
            f64::NAN,
            error,
            error == 0.0,
        ));
    }
    rows
}

/// [`compare_shared_copy`] on the file at [`shared_copy_path`], or one info
/// row saying there is none.
pub fn shared_copy_rows() -> Vec<Row> {
    match std::fs::read_to_string(shared_copy_path()) {
        Ok(text) => compare_shared_copy(&text),
        Err(_) => vec![Row::info(
            "reference_copy",
            "closed_form.json",
            "no shared copy beside the repository; the project's own file is used",
            f64::NAN,
            f64::NAN,
            f64::NAN,
        )],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::references::REFERENCE_JSON;

    #[test]
    fn an_identical_copy_passes_and_a_changed_number_fails() {
        let same = compare_shared_copy(REFERENCE_JSON);
        assert_eq!(same.len(), load_references().unwrap().len());
        assert!(same.iter().all(|r| !r.failed()), "{same:?}");
        let changed = REFERENCE_JSON.replacen("0.06697247706422019", "0.06697247706422", 1);
        assert_ne!(changed, REFERENCE_JSON);
        let rows = compare_shared_copy(&changed);
        let failed: Vec<_> = rows.iter().filter(|r| r.failed()).collect();
        assert_eq!(failed.len(), 1, "{rows:?}");
        assert_eq!(failed[0].case, "ball2d_flat_a");
    }

    #[test]
    fn a_missing_case_fails() {
        let mut doc: serde_json::Value = serde_json::from_str(REFERENCE_JSON).unwrap();
        doc["cases"].as_object_mut().unwrap().remove("lif_a");
        let rows = compare_shared_copy(&doc.to_string());
        assert!(
            rows.iter().any(|r| r.failed() && r.case == "lif_a"),
            "{rows:?}"
        );
    }
}

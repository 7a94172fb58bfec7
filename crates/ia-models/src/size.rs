//! The size of a sized model ([`Size`]): one count (`lif-network`'s
//! neurons, `particle-chain`'s balls) or a list of counts (`cuba-lif`'s
//! layers).

use serde::{Deserialize, Serialize};

/// The size a sized model is built with: the scenario key `"size"`, a
/// number or a list of numbers.
///
/// ```
/// use ia_models::Size;
/// assert_eq!(Size::from(5).to_string(), "5");
/// assert_eq!(Size::from([2, 3, 2]).to_string(), "[2, 3, 2]");
/// assert_eq!(Size::from(vec![4]).counts(), [4]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Size {
    /// One count (`"size": 5`).
    Count(usize),
    /// A list of counts (`"size": [2, 3, 2]`).
    Counts(Vec<usize>),
}

impl Size {
    /// The counts: one for [`Size::Count`], the list for [`Size::Counts`].
    pub fn counts(&self) -> &[usize] {
        match self {
            Size::Count(n) => std::slice::from_ref(n),
            Size::Counts(list) => list,
        }
    }
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Size::Count(n) => write!(f, "{n}"),
            Size::Counts(list) => {
                let items: Vec<String> = list.iter().map(usize::to_string).collect();
                write!(f, "[{}]", items.join(", "))
            }
        }
    }
}

impl From<usize> for Size {
    fn from(n: usize) -> Self {
        Size::Count(n)
    }
}

impl From<Vec<usize>> for Size {
    fn from(list: Vec<usize>) -> Self {
        Size::Counts(list)
    }
}

impl<const N: usize> From<[usize; N]> for Size {
    fn from(list: [usize; N]) -> Self {
        Size::Counts(list.to_vec())
    }
}

//! The application's `resourceStatus` rules for a managed resource.

/// How a managed resource relates to its stock baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StockStatus {
    Missing,
    StockCurrent,
    StockUpdateAvailable,
    OperatorModified,
}

impl StockStatus {
    pub const ALL: [StockStatus; 4] =
        [Self::Missing, Self::StockCurrent, Self::StockUpdateAvailable, Self::OperatorModified];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Missing => "missing",
            Self::StockCurrent => "stock_current",
            Self::StockUpdateAvailable => "stock_update_available",
            Self::OperatorModified => "operator_modified",
        }
    }
}

fn present(value: Option<&str>) -> Option<&str> {
    value.filter(|v| !v.is_empty())
}

/// In order: no resource or no current hash → missing; current = latest →
/// stock_current; a binding hash equal to current → stock_update_available;
/// anything else → operator_modified.
pub fn resource_status(
    resource_id: Option<&str>,
    current_hash: Option<&str>,
    binding_stock_hash: Option<&str>,
    latest_stock_hash: Option<&str>,
) -> StockStatus {
    let (Some(_), Some(current)) = (present(resource_id), present(current_hash)) else {
        return StockStatus::Missing;
    };
    if Some(current) == latest_stock_hash {
        return StockStatus::StockCurrent;
    }
    if present(binding_stock_hash) == Some(current) {
        return StockStatus::StockUpdateAvailable;
    }
    StockStatus::OperatorModified
}

#[cfg(test)]
mod tests {
    use super::*;
    use StockStatus::*;

    #[test]
    fn rules_apply_in_order() {
        assert_eq!(resource_status(None, Some("h"), Some("h"), Some("h")), Missing);
        assert_eq!(resource_status(Some(""), Some("h"), None, Some("h")), Missing);
        assert_eq!(resource_status(Some("r"), None, Some("h"), Some("h")), Missing);
        assert_eq!(resource_status(Some("r"), Some(""), Some(""), Some("")), Missing);
        assert_eq!(resource_status(Some("r"), Some("h"), Some("old"), Some("h")), StockCurrent);
        assert_eq!(resource_status(Some("r"), Some("h"), None, Some("h")), StockCurrent);
        assert_eq!(resource_status(Some("r"), Some("h"), Some("h"), Some("new")), StockUpdateAvailable);
        assert_eq!(resource_status(Some("r"), Some("h"), Some("x"), Some("new")), OperatorModified);
        assert_eq!(resource_status(Some("r"), Some("h"), None, Some("new")), OperatorModified);
        assert_eq!(resource_status(Some("r"), Some("h"), None, None), OperatorModified);
    }
}

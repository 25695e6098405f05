//! A data holder's local table, the input of [`crate::partial()`].
//!
//! Numeric and coded columns only: categories are numeric codes (the node's feature
//! specification maps codes to concepts), and a missing value is `NaN`. Every row has one value
//! per column; a ragged table or a repeated column name is refused when the table is built, and a
//! column the query names but the table lacks is reported as data ([`TableError`]), never a
//! panic.

use serde::{Deserialize, Serialize};

/// Why a table could not be built or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum TableError {
    /// A row has a different number of values than there are columns.
    #[error("row {row} has {found} values, expected {expected}")]
    RaggedRow {
        row: usize,
        expected: usize,
        found: usize,
    },
    /// Two columns share a name.
    #[error("column `{column}` appears more than once")]
    DuplicateColumn { column: String },
    /// Columns of different lengths in [`Table::from_columns`].
    #[error("column `{column}` has {found} values, expected {expected}")]
    ColumnLength {
        column: String,
        expected: usize,
        found: usize,
    },
    /// The query names columns the table does not have (all of them, in query order).
    #[error("unknown columns: {}", columns.join(", "))]
    UnknownColumns { columns: Vec<String> },
}

/// Rows of `f64` values under named columns; `NaN` is a missing value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "TableForm", into = "TableForm")]
pub struct Table {
    columns: Vec<String>,
    rows: Vec<Vec<f64>>,
}

/// The serialised form of a [`Table`] (validated into one on deserialisation). JSON has no NaN:
/// a missing value is written as `null`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TableForm {
    columns: Vec<String>,
    rows: Vec<Vec<Option<f64>>>,
}

impl TryFrom<TableForm> for Table {
    type Error = TableError;
    fn try_from(f: TableForm) -> Result<Self, TableError> {
        let rows = f
            .rows
            .into_iter()
            .map(|r| r.into_iter().map(|v| v.unwrap_or(f64::NAN)).collect())
            .collect();
        Table::new(f.columns, rows)
    }
}

impl From<Table> for TableForm {
    fn from(t: Table) -> Self {
        TableForm {
            columns: t.columns,
            rows: t
                .rows
                .into_iter()
                .map(|r| r.into_iter().map(|v| (!v.is_nan()).then_some(v)).collect())
                .collect(),
        }
    }
}

impl Table {
    /// A table from column names and rows (each row one value per column).
    pub fn new(columns: Vec<String>, rows: Vec<Vec<f64>>) -> Result<Self, TableError> {
        check_unique(&columns)?;
        if let Some((row, r)) = rows
            .iter()
            .enumerate()
            .find(|(_, r)| r.len() != columns.len())
        {
            return Err(TableError::RaggedRow {
                row,
                expected: columns.len(),
                found: r.len(),
            });
        }
        Ok(Self { columns, rows })
    }

    /// A table from `(name, values)` columns of equal length.
    pub fn from_columns<S: Into<String>>(columns: Vec<(S, Vec<f64>)>) -> Result<Self, TableError> {
        let (names, values): (Vec<String>, Vec<Vec<f64>>) =
            columns.into_iter().map(|(n, v)| (n.into(), v)).unzip();
        check_unique(&names)?;
        let len = values.first().map_or(0, Vec::len);
        if let Some((i, v)) = values.iter().enumerate().find(|(_, v)| v.len() != len) {
            return Err(TableError::ColumnLength {
                column: names[i].clone(),
                expected: len,
                found: v.len(),
            });
        }
        let rows = (0..len)
            .map(|r| values.iter().map(|col| col[r]).collect())
            .collect();
        Ok(Self {
            columns: names,
            rows,
        })
    }

    /// An empty table with these columns.
    pub fn empty(columns: Vec<String>) -> Result<Self, TableError> {
        Self::new(columns, Vec::new())
    }

    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    pub fn rows(&self) -> &[Vec<f64>] {
        &self.rows
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Position of a column.
    pub fn column_index(&self, name: &str) -> Result<usize, TableError> {
        self.columns
            .iter()
            .position(|c| c == name)
            .ok_or_else(|| TableError::UnknownColumns {
                columns: vec![name.to_owned()],
            })
    }

    /// Positions of several columns, reporting every missing one at once.
    pub fn column_indices(&self, names: &[&str]) -> Result<Vec<usize>, TableError> {
        let mut found = Vec::with_capacity(names.len());
        let mut missing: Vec<String> = Vec::new();
        for n in names {
            match self.columns.iter().position(|c| c == n) {
                Some(i) => found.push(i),
                None => {
                    if !missing.iter().any(|m| m == n) {
                        missing.push((*n).to_owned());
                    }
                }
            }
        }
        if missing.is_empty() {
            Ok(found)
        } else {
            Err(TableError::UnknownColumns { columns: missing })
        }
    }

    /// The rows at these positions, as a table with the same columns (tests split one table
    /// across several nodes with it).
    pub fn select_rows(&self, positions: &[usize]) -> Table {
        Table {
            columns: self.columns.clone(),
            rows: positions.iter().map(|&i| self.rows[i].clone()).collect(),
        }
    }
}

fn check_unique(columns: &[String]) -> Result<(), TableError> {
    for (i, c) in columns.iter().enumerate() {
        if columns[..i].contains(c) {
            return Err(TableError::DuplicateColumn { column: c.clone() });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_ragged_rows_and_duplicate_columns() {
        let e = Table::new(
            vec!["a".into(), "b".into()],
            vec![vec![1.0, 2.0], vec![1.0]],
        );
        assert_eq!(
            e,
            Err(TableError::RaggedRow {
                row: 1,
                expected: 2,
                found: 1
            })
        );
        let e = Table::new(vec!["a".into(), "a".into()], vec![]);
        assert_eq!(e, Err(TableError::DuplicateColumn { column: "a".into() }));
        let e = Table::from_columns(vec![("a", vec![1.0]), ("b", vec![])]);
        assert!(matches!(e, Err(TableError::ColumnLength { .. })));
    }

    #[test]
    fn reports_every_unknown_column() {
        let t = Table::from_columns(vec![("age", vec![1.0]), ("sex", vec![0.0])]).unwrap();
        assert_eq!(t.column_indices(&["sex", "age"]), Ok(vec![1, 0]));
        assert_eq!(
            t.column_indices(&["bmi", "age", "los", "bmi"]),
            Err(TableError::UnknownColumns {
                columns: vec!["bmi".into(), "los".into()]
            })
        );
    }

    #[test]
    fn missing_values_travel_as_null() {
        let t = Table::from_columns(vec![("a", vec![1.0, f64::NAN])]).unwrap();
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(json, r#"{"columns":["a"],"rows":[[1.0],[null]]}"#);
        let back: Table = serde_json::from_str(&json).unwrap();
        assert!(back.rows()[1][0].is_nan());
        assert!(serde_json::from_str::<Table>(r#"{"columns":["a"],"rows":[[1,2]]}"#).is_err());
    }
}

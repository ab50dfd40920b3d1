//! SQL identifiers: only plain names are accepted, so that quoting them per
//! dialect is always safe.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ident(String);

impl Ident {
    pub fn parse(text: &str) -> Result<Ident, String> {
        let mut chars = text.chars();
        let plain = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
            && text.len() <= 63;
        if plain {
            Ok(Ident(text.to_string()))
        } else {
            Err(format!(
                "\"{text}\" is not a plain identifier; expected an ASCII letter (a-z, A-Z) or _, then ASCII letters, digits (0-9) or _, at most 63 characters in all"
            ))
        }
    }

    /// An identifier idem itself names (its ledger), known to be plain.
    pub(crate) fn from_static(name: &'static str) -> Ident {
        debug_assert!(Ident::parse(name).is_ok());
        Ident(name.to_string())
    }

    /// This name with a plain suffix (letters, digits, `_`) of idem's own:
    /// still plain.
    pub(crate) fn with_suffix(&self, suffix: &'static str) -> Ident {
        debug_assert!(
            suffix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        );
        Ident(format!("{}{suffix}", self.0))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Ident {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A target table, optionally schema-qualified: `analytics.fct_orders`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TableName {
    pub schema: Option<Ident>,
    pub name: Ident,
}

impl TableName {
    pub fn parse(text: &str) -> Result<TableName, String> {
        let parts: Vec<&str> = text.split('.').collect();
        let bad = |_| {
            format!(
                "\"{text}\" is not a table name; expected table or schema.table of plain identifiers (ASCII letters, digits and _, not beginning with a digit)"
            )
        };
        match parts.as_slice() {
            [name] => Ok(TableName {
                schema: None,
                name: Ident::parse(name).map_err(bad)?,
            }),
            [schema, name] => Ok(TableName {
                schema: Some(Ident::parse(schema).map_err(bad)?),
                name: Ident::parse(name).map_err(bad)?,
            }),
            _ => Err(bad(String::new())),
        }
    }
}

impl fmt::Display for TableName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.schema {
            Some(s) => write!(f, "{s}.{}", self.name),
            None => write!(f, "{}", self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_identifiers_pass() {
        assert!(Ident::parse("dt").is_ok());
        assert!(Ident::parse("_loaded_at2").is_ok());
        for bad in ["", "2dt", "dt;drop", "d t", "\"dt\"", "dt`"] {
            assert!(Ident::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            TableName::parse("analytics.fct").unwrap().to_string(),
            "analytics.fct"
        );
        assert!(TableName::parse("a.b.c").is_err());
    }
}

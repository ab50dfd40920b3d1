//! A job's definition: everything that changes what it writes, and the
//! hash the ledger records it under, which says whether a partition was
//! loaded under the definition the config has now.

use sha2::{Digest, Sha256};

use super::{Ident, Job, hex, sql_text};

/// A job's definition hashes: as made now, and as made before the SQL was
/// read as its server reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    current: String,
    before: String,
}

impl Definition {
    /// Whether a ledger's definition hash names this definition.
    pub fn is(&self, hash: &str) -> bool {
        if hash.starts_with(DEFINITION_HASH_V2) {
            hash == self.current
        } else {
            hash == self.before
        }
    }
}

/// How a definition hash made over the job's SQL read as its server reads
/// it begins; one made before, over the text as written, is 16 hex digits.
const DEFINITION_HASH_V2: &str = "2:";

impl Job {
    /// Everything that changes what the job writes, as text: what the
    /// definition hash covers, and what `idem diff` compares.
    pub fn definition_text(&self) -> String {
        let keys: Vec<&str> = self.unique_key.iter().map(Ident::as_str).collect();
        format!(
            "strategy = {}\ntarget = {}\npartition_column = {}\nunique_key = [{}]\ngrain = {}\nsql:\n{}\n",
            self.strategy.as_str(),
            self.target,
            self.partition_column.as_ref().map_or("", |c| c.as_str()),
            keys.join(", "),
            self.grain,
            self.sql.trim()
        )
    }

    /// The definition's hash: of [`Job::definition_text`] with its SQL as
    /// the server reads it, whitespace and comments aside
    /// ([`sql_text::normalized`]), marked `2:`. A partition last loaded
    /// under another definition is stale ([`Job::is_definition`]).
    pub fn definition_hash(&self) -> String {
        let mut job = self.clone();
        job.sql = sql_text::normalized(&self.sql, self.engine);
        format!(
            "{DEFINITION_HASH_V2}{}",
            hex(&Sha256::digest(job.definition_text().as_bytes())[..8])
        )
    }

    /// Whether a ledger's definition hash is this job's definition: one
    /// made as [`Job::definition_hash`] makes them, or one made before it
    /// (of the text as written, unmarked), which names this definition
    /// while its text is the same to the byte.
    pub fn is_definition(&self, hash: &str) -> bool {
        self.definition().is(hash)
    }

    /// Both hashes [`Job::is_definition`] compares with, made once for
    /// comparing many.
    pub fn definition(&self) -> Definition {
        Definition {
            current: self.definition_hash(),
            before: hex(&Sha256::digest(self.definition_text().as_bytes())[..8]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(sql: &str) -> Job {
        let text = format!(
            "[warehouse]\nurl = \"sqlite://w.db\"\n\n[[jobs]]\nname = \"fct\"\ntarget = \"fct\"\nstrategy = \"replace_partition\"\npartition_column = \"dt\"\ngrain = \"day\"\nstart = \"2026-01-01\"\nsql = '''{sql}'''\n"
        );
        let path = std::path::Path::new("idem.toml");
        let config = crate::config::parse(path, &text, &|_| None).expect("a config");
        config.jobs[0].clone()
    }

    #[test]
    fn a_definition_is_its_query_as_the_server_reads_it() {
        let sql = "select id, dt from src where dt >= :start and dt < :end";
        let now = job(sql);
        let reformatted = job(
            "-- the orders\nselect id,\n       dt\n  from src /* all of it */\n where dt >= :start and dt < :end;\n",
        );
        assert!(now.definition_hash().starts_with("2:"));
        assert_eq!(now.definition_hash(), reformatted.definition_hash());
        assert!(reformatted.is_definition(&now.definition_hash()));
        let changed = job("select id, dt from src where dt >= :start and dt <= :end");
        assert!(!changed.is_definition(&now.definition_hash()));
        // A hash made before (of the text as written) names the definition
        // while the text is the same to the byte.
        let before = hex(&Sha256::digest(now.definition_text().as_bytes())[..8]);
        assert!(now.is_definition(&before));
        assert!(!reformatted.is_definition(&before));
        assert!(!changed.is_definition(&before));
    }
}

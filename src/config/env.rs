//! `${VAR}` in config values: expanded from the environment, and named in
//! the errors about what they expanded to.

/// Expands `${VAR}` from the environment; an unset variable is an error.
pub(super) fn expand_env(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let close = after
            .find('}')
            .ok_or_else(|| format!("unclosed \"${{\" in \"{text}\"; write ${{VAR}}"))?;
        let name = &after[..close];
        let value = env(name).ok_or_else(|| {
            format!("environment variable {name} is not set (used as ${{{name}}})")
        })?;
        out.push_str(&value);
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Where an expanded value came from, for an error about it: ` (from
/// ${DATABASE_URL}, which is empty)`; nothing when `text` names no variable.
pub(super) fn expanded_from(text: &str, env: &dyn Fn(&str) -> Option<String>) -> String {
    let mut named = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("${") {
        let after = &rest[i + 2..];
        let Some(close) = after.find('}') else { break };
        let name = &after[..close];
        let value = env(name).unwrap_or_default();
        named.push(if value.trim().is_empty() {
            format!("${{{name}}}, which is empty")
        } else {
            format!("${{{name}}}")
        });
        rest = &after[close + 1..];
    }
    if named.is_empty() {
        String::new()
    } else {
        format!(" (it comes from {})", named.join(" and "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_expansion() {
        let env = |k: &str| (k == "DB").then(|| "sqlite://x.db".to_string());
        assert_eq!(expand_env("${DB}", &env).unwrap(), "sqlite://x.db");
        assert!(
            expand_env("${NOPE}", &env)
                .unwrap_err()
                .contains("NOPE is not set")
        );
    }
}

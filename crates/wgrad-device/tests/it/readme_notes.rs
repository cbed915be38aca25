//! The README's platform notes cover what users of the GPU device layer
//! meet: the Vulkan loader's harmless `XDG_RUNTIME_DIR` message (which a
//! library must not silence by setting environment variables), and how
//! devices are chosen and addressed (`gpu:N`, software adapters skipped).

fn readme() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");
    std::fs::read_to_string(path).expect("README.md at the workspace root")
}

/// The README's section starting at `heading`, up to the next `## ` heading.
fn section(readme: &str, heading: &str) -> String {
    let start = readme
        .find(heading)
        .unwrap_or_else(|| panic!("README has no {heading:?} section"));
    let rest = &readme[start + heading.len()..];
    let end = rest.find("\n## ").unwrap_or(rest.len());
    rest[..end].to_string()
}

#[test]
fn platform_notes_explain_the_xdg_runtime_dir_message() {
    let notes = section(&readme(), "## Platform notes");
    assert!(
        notes.contains("XDG_RUNTIME_DIR is invalid or not set"),
        "quote the message so users can search for it"
    );
    assert!(notes.contains("harmless"), "say that it is harmless");
    assert!(
        notes.contains("export XDG_RUNTIME_DIR="),
        "say how to silence it"
    );
}

#[test]
fn device_selection_is_documented() {
    let readme = readme();
    assert!(readme.contains("gpu:N"), "document gpu:N addressing");
    assert!(
        readme.contains("lavapipe") && readme.contains("software"),
        "say that software adapters are not picked automatically"
    );
    assert!(readme.contains("best_with_reason"));
}

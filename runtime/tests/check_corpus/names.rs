//! File names against spec/directory.toml's table of extensions
//! (`Extension::folder`, `since`, `until`): each extension passes in its
//! folder and in the versions that name files with it; elsewhere the finding
//! says where it belongs, or which versions write it.

use tiledb_runtime::check::name_problem;

const STEM: &str = "__10_10_2cb75e60d115c25ae6c095a6b70aad71";

fn problem(path: &str) -> String {
    name_problem(path).unwrap_or_else(|| panic!("{path} passed"))
}

#[test]
fn each_extension_stands_in_its_folder_and_versions() {
    for ok in [
        format!("__commits/{STEM}_22.wrt"),
        format!("__commits/{STEM}_22.del"),
        format!("__commits/{STEM}_22.vac"),
        format!("__commits/{STEM}_22.con"),
        format!("{STEM}_11.ok"),
        format!("{STEM}_11.vac"),
        format!("{STEM}_11.meta"),
        format!("__fragment_meta/{STEM}_22.meta"),
        format!("__meta/{STEM}"),
        format!("__meta/{STEM}.vac"),
    ] {
        assert_eq!(name_problem(&ok), None, "{ok}");
    }
    // In the wrong folder: where it belongs, from the table.
    let wrt = problem(&format!("{STEM}_22.wrt"));
    assert!(wrt.ends_with("a .wrt file belongs in __commits/"), "{wrt}");
    let ok = problem(&format!("__commits/{STEM}_11.ok"));
    assert!(
        ok.ends_with("a .ok file belongs in the array's folder"),
        "{ok}"
    );
    let meta = problem(&format!("__commits/{STEM}_22.meta"));
    assert!(
        meta.ends_with("a .meta file does not belong here"),
        "{meta}"
    );
    let bare = problem(&format!("__commits/{STEM}_22"));
    assert!(bare.contains("without an extension"), "{bare}");
    // In a version that names no such file.
    let late_ok = problem(&format!("{STEM}_12.ok"));
    assert!(
        late_ok.contains("format version 12 names no .ok files (versions 5 to 11)"),
        "{late_ok}"
    );
    let early_wrt = problem(&format!("__commits/{STEM}_11.wrt"));
    assert!(
        early_wrt.contains("format version 11 names no .wrt files (from version 12)"),
        "{early_wrt}"
    );
}

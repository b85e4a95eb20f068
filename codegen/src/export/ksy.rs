pub fn render(_: &crate::model::Spec, _: &crate::model::TypeTable) -> Vec<(String, String)> {
    Vec::new()
}

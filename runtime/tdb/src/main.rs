fn main() {
    println!("tdb {}", env!("CARGO_PKG_VERSION"));
}

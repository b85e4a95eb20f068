//! Prints the array schema stored in the array folder given as the first argument.
use tiledb_runtime::storage::{LocalStorage, RelPath, Storage};
fn main() {
    let dir = std::env::args().nth(1).unwrap();
    let st = LocalStorage::new(&dir);
    let list = st
        .list(&RelPath::parse("__schema").unwrap())
        .unwrap()
        .unwrap();
    for e in list {
        if e.is_file() {
            let bytes = st
                .read(&RelPath::parse(&format!("__schema/{}", e.name)).unwrap())
                .unwrap();
            let gt = tiledb_runtime::tile::generic::read_generic_tile(&bytes, 0, None).unwrap();
            let s =
                tiledb_runtime::schema::ArraySchema::from_payload(&e.name, &gt.payload).unwrap();
            println!("{:?}", s.stored);
        }
    }
}

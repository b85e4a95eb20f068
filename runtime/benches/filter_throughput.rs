//! Throughput of every filter, through the tile API (chunking, framing and
//! the pipeline machinery included), next to the raw codec on the same bytes.
//!
//!     cargo bench -p tiledb-runtime --bench filter_throughput [-- FILTER_NAME_SUBSTRING]
//!
//! Each measurement repeats until it has run for `BENCH_SECONDS` (default
//! 0.3 s) and reports MB/s of unfiltered bytes. Ours runs on one thread (like
//! the raw codec) and then on all threads of the rayon pool.

use std::hint::black_box;
use std::time::{Duration, Instant};

use tiledb_runtime::filter::{Datatype, Filter, FilterContext, FilterPipeline, WebpFormat};
use tiledb_runtime::tile::{filter_tile, unfilter_tile};

const MIB: usize = 1 << 20;

fn budget() -> Duration {
    let secs = std::env::var("BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.3);
    Duration::from_secs_f64(secs)
}

/// MB/s of `bytes` processed per call of `f`.
fn rate(bytes: usize, mut f: impl FnMut()) -> f64 {
    f(); // warm up
    let start = Instant::now();
    let mut runs = 0u32;
    while start.elapsed() < budget() || runs < 2 {
        f();
        runs += 1;
    }
    bytes as f64 * runs as f64 / start.elapsed().as_secs_f64() / 1e6
}

/// 4 MiB of slowly varying int32 values with runs: compressible, like
/// typical numeric tiles.
fn values() -> Vec<u8> {
    let mut x: u32 = 12345;
    let mut v = 1000i32;
    (0..MIB)
        .flat_map(|_| {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            v += (x >> 29) as i32 - 3;
            v.to_le_bytes()
        })
        .collect()
}

type Raw = Option<(
    Box<dyn Fn(&[u8]) -> Vec<u8>>,
    Box<dyn Fn(&[u8], usize) -> Vec<u8>>,
)>;

fn raw_codec(filter: &Filter) -> Raw {
    use std::io::{Read, Write};
    match filter {
        Filter::Zstd { .. } => Some((
            Box::new(|d| zstd::bulk::compress(d, 3).unwrap()),
            Box::new(|c, n| zstd::bulk::decompress(c, n).unwrap()),
        )),
        Filter::Gzip { .. } => Some((
            Box::new(|d| {
                let mut z =
                    flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(6));
                z.write_all(d).unwrap();
                z.finish().unwrap()
            }),
            Box::new(|c, n| {
                let mut out = Vec::with_capacity(n);
                flate2::read::ZlibDecoder::new(c)
                    .read_to_end(&mut out)
                    .unwrap();
                out
            }),
        )),
        Filter::Lz4 { .. } => Some((
            Box::new(lz4_flex::block::compress),
            Box::new(|c, n| lz4_flex::block::decompress(c, n).unwrap()),
        )),
        Filter::Bzip2 { .. } => Some((
            Box::new(|d| {
                let mut z = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(1));
                z.write_all(d).unwrap();
                z.finish().unwrap()
            }),
            Box::new(|c, n| {
                let mut out = Vec::with_capacity(n);
                bzip2::read::BzDecoder::new(c)
                    .read_to_end(&mut out)
                    .unwrap();
                out
            }),
        )),
        Filter::ChecksumMd5 => Some((
            Box::new(|d| {
                use md5::Digest;
                md5::Md5::digest(d).to_vec()
            }),
            Box::new(|_, _| Vec::new()),
        )),
        Filter::ChecksumSha256 => Some((
            Box::new(|d| {
                use sha2::Digest;
                sha2::Sha256::digest(d).to_vec()
            }),
            Box::new(|_, _| Vec::new()),
        )),
        _ => None,
    }
}

/// The cells `filter` is timed on: `data`, made non-decreasing for
/// positive delta, or as floats for `datatype` Float32.
fn input_for(filter: &Filter, datatype: Datatype, data: &[u8]) -> Vec<u8> {
    if matches!(filter, Filter::PositiveDelta { .. }) {
        // Positive delta needs values that never decrease.
        let mut total = 0i32;
        data.chunks_exact(4)
            .flat_map(|c| {
                total = total.wrapping_add(i32::from_le_bytes([c[0], c[1], c[2], c[3]]) & 7);
                total.to_le_bytes()
            })
            .collect()
    } else if datatype == Datatype::Float32 {
        data.chunks_exact(4)
            .flat_map(|c| (i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f32).to_le_bytes())
            .collect()
    } else {
        data.to_vec()
    }
}

fn main() {
    let only: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let data = values();
    let filters = vec![
        Filter::None,
        Filter::Gzip { level: -1 },
        Filter::Zstd { level: 3 },
        Filter::Lz4 { level: 0 },
        Filter::Bzip2 { level: 1 },
        Filter::Rle { level: 0 },
        Filter::Delta {
            level: 0,
            reinterpret: None,
        },
        Filter::DoubleDelta {
            level: 0,
            reinterpret: None,
        },
        Filter::BitWidthReduction { max_window: 256 },
        Filter::PositiveDelta { max_window: 1024 },
        Filter::BitShuffle,
        Filter::ByteShuffle,
        Filter::ChecksumMd5,
        Filter::ChecksumSha256,
        Filter::Xor,
        Filter::ScaleFloat {
            scale: 1.0,
            offset: 0.0,
            byte_width: 4,
        },
        Filter::Aes256Gcm,
    ];
    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool");
    println!(
        "{:<22} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}   (MB/s of {} MiB int32)",
        "filter",
        "enc 1t",
        "dec 1t",
        "enc all",
        "dec all",
        "raw enc",
        "raw dec",
        data.len() / MIB
    );
    for filter in filters {
        if only.as_deref().is_some_and(|o| !filter.name().contains(o)) {
            continue;
        }
        let datatype = if matches!(filter, Filter::ScaleFloat { .. }) {
            Datatype::Float32
        } else {
            Datatype::Int32
        };
        let ctx = FilterContext::new(datatype, 4, 22).with_key([1; 32]);
        let pipeline = FilterPipeline::new(vec![filter.clone()]);
        let input = input_for(&filter, datatype, &data);
        let filtered = filter_tile(&input, &pipeline, &ctx).expect("filter");
        let n = input.len() as u64;
        // Timing a failure would flatter us: check the round trip first.
        let back = unfilter_tile(&filtered, &pipeline, &ctx, n).expect("unfilter");
        if !matches!(filter, Filter::ScaleFloat { .. }) {
            assert!(back == input, "{} does not round-trip", filter.name());
        }
        let enc1 = one_thread.install(|| {
            rate(input.len(), || {
                drop(black_box(filter_tile(&input, &pipeline, &ctx)));
            })
        });
        let dec1 = one_thread.install(|| {
            rate(input.len(), || {
                drop(black_box(unfilter_tile(&filtered, &pipeline, &ctx, n)));
            })
        });
        let enc = rate(input.len(), || {
            drop(black_box(filter_tile(&input, &pipeline, &ctx)));
        });
        let dec = rate(input.len(), || {
            drop(black_box(unfilter_tile(&filtered, &pipeline, &ctx, n)));
        });
        let (raw_enc, raw_dec) = match raw_codec(&filter) {
            Some((compress, decompress)) => {
                let compressed = compress(&input);
                let e = rate(input.len(), || drop(black_box(compress(&input))));
                let d = if compressed.len() > 64 {
                    format!(
                        "{:9.0}",
                        rate(input.len(), || drop(black_box(decompress(
                            &compressed,
                            input.len()
                        ))))
                    )
                } else {
                    format!("{:>9}", "-")
                };
                (format!("{e:9.0}"), d)
            }
            None => (format!("{:>9}", "-"), format!("{:>9}", "-")),
        };
        println!(
            "{:<22} {enc1:9.0} {dec1:9.0} {enc:9.0} {dec:9.0} {raw_enc} {raw_dec}   ratio {:.2}",
            filter.name(),
            input.len() as f64 / filtered.len() as f64
        );
    }
    if only.as_deref().is_none_or(|o| "WEBP".contains(o)) {
        bench_webp();
    }
}

/// WebP has its own shape: one 512×512 RGBA image, one chunk.
fn bench_webp() {
    let (h, w) = (512usize, 512usize);
    let image: Vec<u8> = (0..h * w * 4).map(|i| ((i / 4) % 256) as u8).collect();
    let pipeline = FilterPipeline::new(vec![Filter::Webp {
        quality: 100.0,
        format: WebpFormat::Rgba,
        lossless: true,
        y_extent: h as u16,
        x_extent: (w * 4) as u16,
    }]);
    let ctx = FilterContext::new(Datatype::Uint8, 1, 22);
    let filtered = filter_tile(&image, &pipeline, &ctx).expect("webp");
    let back = unfilter_tile(&filtered, &pipeline, &ctx, image.len() as u64).expect("webp back");
    assert!(back == image, "WEBP does not round-trip");
    let enc = rate(image.len(), || {
        drop(black_box(filter_tile(&image, &pipeline, &ctx)));
    });
    let dec = rate(image.len(), || {
        drop(black_box(unfilter_tile(
            &filtered,
            &pipeline,
            &ctx,
            image.len() as u64,
        )));
    });
    println!("{:<22} {enc:9.0} {dec:9.0} (lossless, 1 chunk)", "WEBP");
}

//! WEBP (`webp_filter.cc`): each part is one image of `y_extent` rows of
//! `x_extent` bytes (`x_extent / pixel_depth` pixels), stored as a WebP
//! bitstream. The filter runs on UINT8 only and TileDB never chunks its
//! tiles.
//!
//! Metadata: `n_parts u32`, then each encoded size `u32`, then the earlier
//! metadata.
//!
//! Decoding handles lossy and lossless images (pure-Rust `image-webp`).
//! Encoding, by default, is lossless only: there is no pure-Rust lossy WebP
//! encoder, so a lossy pipeline is reported as unsupported for writing, and
//! our lossless bitstreams differ from libwebp's while decoding to the same
//! pixels. With the `libwebp` feature, encoding calls libwebp exactly as
//! TileDB does (`WebPEncode[Lossless]{RGB,BGR,RGBA,BGRA}`), lossy included.
#![allow(unsafe_code, reason = "libwebp FFI; each block states its SAFETY")]

use std::io::Cursor as IoCursor;

use image_webp::WebPDecoder;

use super::byteshuffle::{read_sizes, write_part_sizes};
use super::stage::{
    codec_fault, corrupt, corrupt_part, prepend_metadata, Cursor, Fault, MetadataOut, OutBuf,
    Parts, StageEnv, StageResult,
};
use super::{Datatype, Filter, WebpFormat};
use crate::error::Cause;

struct Image {
    format: WebpFormat,
    lossless: bool,
    height: usize,
    stride: usize,
    depth: usize,
}

fn image(env: &StageEnv<'_>) -> Result<Image, String> {
    let Filter::Webp {
        format,
        lossless,
        y_extent,
        x_extent,
        ..
    } = env.filter
    else {
        return Err("not a WebP filter".into());
    };
    if env.datatype != Datatype::Uint8 {
        return Err(format!(
            "WebP applies to UINT8 only, not {}",
            env.datatype.name()
        ));
    }
    let depth = match format {
        WebpFormat::None => 0,
        WebpFormat::Rgb | WebpFormat::Bgr => 3,
        WebpFormat::Rgba | WebpFormat::Bgra => 4,
    };
    if depth == 0 {
        return Err("WebP format is NONE".into());
    }
    Ok(Image {
        format: *format,
        lossless: *lossless,
        height: *y_extent as usize,
        stride: *x_extent as usize,
        depth,
    })
}

fn swap_red_blue(pixels: &mut [u8], depth: usize) {
    for px in pixels.chunks_exact_mut(depth) {
        px.swap(0, 2);
    }
}

/// One image through libwebp's simple encoding API, as TileDB calls it.
#[cfg(feature = "libwebp")]
fn encode(img: &Image, pixels: &[u8], quality: f32) -> StageResult<Vec<u8>> {
    use libwebp_sys as webp;
    let width = (img.stride / img.depth) as std::ffi::c_int;
    let (height, stride) = (img.height as std::ffi::c_int, img.stride as std::ffi::c_int);
    let mut output: *mut u8 = std::ptr::null_mut();
    let data = pixels.as_ptr();
    // SAFETY: `pixels` holds height × stride bytes (checked by the caller);
    // libwebp allocates `output`, which is freed below.
    let size = unsafe {
        match (img.format, img.lossless) {
            (WebpFormat::Rgb, true) => {
                webp::WebPEncodeLosslessRGB(data, width, height, stride, &mut output)
            }
            (WebpFormat::Bgr, true) => {
                webp::WebPEncodeLosslessBGR(data, width, height, stride, &mut output)
            }
            (WebpFormat::Rgba, true) => {
                webp::WebPEncodeLosslessRGBA(data, width, height, stride, &mut output)
            }
            (WebpFormat::Bgra, true) => {
                webp::WebPEncodeLosslessBGRA(data, width, height, stride, &mut output)
            }
            (WebpFormat::Rgb, false) => {
                webp::WebPEncodeRGB(data, width, height, stride, quality, &mut output)
            }
            (WebpFormat::Bgr, false) => {
                webp::WebPEncodeBGR(data, width, height, stride, quality, &mut output)
            }
            (WebpFormat::Rgba, false) => {
                webp::WebPEncodeRGBA(data, width, height, stride, quality, &mut output)
            }
            (WebpFormat::Bgra, false) => {
                webp::WebPEncodeBGRA(data, width, height, stride, quality, &mut output)
            }
            (WebpFormat::None, _) => 0,
        }
    };
    if size == 0 || output.is_null() {
        return Err(Fault::Usage("libwebp could not encode the image".into()));
    }
    // SAFETY: libwebp returned `size` bytes at `output`.
    let encoded = unsafe { std::slice::from_raw_parts(output, size) }.to_vec();
    // SAFETY: `output` came from libwebp and is freed once.
    unsafe { webp::WebPFree(output.cast()) };
    Ok(encoded)
}

#[cfg(not(feature = "libwebp"))]
fn encode(img: &Image, pixels: &[u8], _quality: f32) -> StageResult<Vec<u8>> {
    if !img.lossless {
        return Err(Fault::Unsupported(
            "lossy WebP encoding (no pure-Rust lossy encoder; build with the libwebp feature)"
                .into(),
        ));
    }
    let width = img.stride / img.depth;
    let mut pixels = pixels.to_vec();
    if matches!(img.format, WebpFormat::Bgr | WebpFormat::Bgra) {
        swap_red_blue(&mut pixels, img.depth);
    }
    let color = if img.depth == 3 {
        image_webp::ColorType::Rgb8
    } else {
        image_webp::ColorType::Rgba8
    };
    let mut encoded = Vec::new();
    image_webp::WebPEncoder::new(&mut encoded)
        .encode(&pixels, width as u32, img.height as u32, color)
        .map_err(|e| Fault::Usage(format!("WebP encoding: {e}")))?;
    Ok(encoded)
}

pub(crate) fn forward<'a>(env: &StageEnv<'_>, input: Parts<'a>) -> StageResult<Parts<'a>> {
    let img = image(env).map_err(Fault::Usage)?;
    let Filter::Webp { quality, .. } = env.filter else {
        return Err(Fault::Usage("not a WebP filter".into()));
    };
    let width = img.stride / img.depth;
    let mut sizes = Vec::with_capacity(input.data.len());
    let mut outputs = Vec::with_capacity(input.data.len());
    for part in &input.data {
        if width == 0 || img.height == 0 || part.len() != img.height * width * img.depth {
            return Err(Fault::Usage(format!(
                "WebP part of {} bytes is not a {}×{} image of {}-byte pixels",
                part.len(),
                width,
                img.height,
                img.depth
            )));
        }
        let encoded = encode(&img, part, *quality)?;
        sizes.push(
            u32::try_from(encoded.len())
                .map_err(|_| Fault::Usage("a WebP image exceeds 4 GiB".into()))?,
        );
        outputs.push(encoded);
    }
    // TileDB prepends each encoded part; the order only matters for
    // several parts, which a non-empty chunk never has.
    outputs.reverse();
    let md = write_part_sizes(&sizes)?;
    Ok(prepend_metadata(md, input.metadata, outputs))
}

fn decode(img: &Image, bytes: &[u8], limit: usize) -> StageResult<Vec<u8>> {
    let mut decoder =
        WebPDecoder::new(IoCursor::new(bytes)).map_err(|e| codec_fault("WebP", e.to_string()))?;
    let (w, h) = decoder.dimensions();
    let (w, h) = (w as usize, h as usize);
    let channels = if decoder.has_alpha() { 4 } else { 3 };
    if w.saturating_mul(h).saturating_mul(4) > limit.saturating_mul(2).max(1 << 16) {
        return corrupt_part(
            "image size",
            Cause::OutOfRange {
                value: w.saturating_mul(h).saturating_mul(4) as u64,
                limit: limit.saturating_mul(2).max(1 << 16) as u64,
            },
        );
    }
    let mut decoded = vec![0u8; w * h * channels];
    decoder
        .read_image(&mut decoded)
        .map_err(|e| codec_fault("WebP", e.to_string()))?;
    // Convert to the stored layout, as libwebp's WebPDecodeRGB/RGBA/BGR/BGRA do.
    let mut pixels = Vec::with_capacity(w * h * img.depth);
    for px in decoded.chunks_exact(channels) {
        pixels.extend_from_slice(&px[..3]);
        if img.depth == 4 {
            pixels.push(if channels == 4 { px[3] } else { 255 });
        }
    }
    if matches!(img.format, WebpFormat::Bgr | WebpFormat::Bgra) {
        swap_red_blue(&mut pixels, img.depth);
    }
    Ok(pixels)
}

pub(crate) fn reverse(
    env: &StageEnv<'_>,
    md: &mut Cursor<'_>,
    data: &[u8],
    out: &mut OutBuf<'_>,
) -> StageResult<MetadataOut> {
    let img = image(env).map_err(Fault::corrupt)?;
    let sizes = read_sizes(md)?;
    let mut images = Vec::with_capacity(sizes.len());
    let mut pos = 0usize;
    for size in sizes {
        if size > data.len() - pos {
            return corrupt(Cause::Truncated {
                needed: size as u64,
                available: (data.len() - pos) as u64,
            });
        }
        images.push(decode(&img, &data[pos..pos + size], out.limit())?);
        pos += size;
    }
    out.put(&images.concat())?;
    Ok(MetadataOut::Rest)
}

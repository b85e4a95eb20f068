//! Not yet written.

use super::stage::{Cursor, Fault, MetadataOut, OutBuf, Parts, StageEnv, StageResult};

pub(crate) fn forward(_env: &StageEnv<'_>, _input: Parts) -> StageResult<Parts> {
    Err(Fault::Unsupported("filter not yet implemented".into()))
}

pub(crate) fn reverse(
    _env: &StageEnv<'_>,
    _md: &mut Cursor<'_>,
    _data: &[u8],
    _out: &mut OutBuf<'_>,
) -> StageResult<MetadataOut> {
    Err(Fault::Unsupported("filter not yet implemented".into()))
}

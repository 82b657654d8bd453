//! Arguments built from the pure core's values without going through Rust types pgrx would copy: texts from
//! bytes, timestamps from PostgreSQL's microseconds, one-dimensional arrays of them.

use pgrx::datum::DatumWithOid;
use pgrx::prelude::*;

pub fn text_datum(bytes: &[u8]) -> pg_sys::Datum {
    // SAFETY: copies `bytes` into a new text in the current memory context.
    unsafe { pg_sys::Datum::from(pg_sys::cstring_to_text_with_len(bytes.as_ptr().cast(), bytes.len() as i32)) }
}

pub fn text_arg(bytes: Option<&[u8]>) -> DatumWithOid<'static> {
    match bytes {
        // SAFETY: a text datum, typed as text.
        Some(bytes) => unsafe { DatumWithOid::new(text_datum(bytes), pg_sys::TEXTOID) },
        None => DatumWithOid::null_oid(pg_sys::TEXTOID),
    }
}

pub fn timestamptz_arg(at: Option<i64>) -> DatumWithOid<'static> {
    match at {
        // SAFETY: a timestamptz is an int64 by value.
        Some(at) => unsafe { DatumWithOid::new(pg_sys::Datum::from(at), pg_sys::TIMESTAMPTZOID) },
        None => DatumWithOid::null_oid(pg_sys::TIMESTAMPTZOID),
    }
}

/// A one-dimensional array (NULL elements allowed) as an argument of type `array_oid`.
pub fn array_arg(values: Vec<Option<pg_sys::Datum>>, element: pg_sys::Oid, array_oid: pg_sys::Oid) -> DatumWithOid<'static> {
    let (mut datums, mut nulls): (Vec<pg_sys::Datum>, Vec<bool>) =
        values.into_iter().map(|v| (v.unwrap_or(pg_sys::Datum::from(0)), v.is_none())).unzip();
    let (mut length, mut by_value, mut align) = (0i16, false, 0 as std::ffi::c_char);
    let mut dims = [datums.len() as i32];
    let mut lower_bounds = [1i32];
    // SAFETY: the element arrays have `dims[0]` entries; construct_md_array copies them.
    unsafe {
        pg_sys::get_typlenbyvalalign(element, &mut length, &mut by_value, &mut align);
        let array = pg_sys::construct_md_array(
            datums.as_mut_ptr(),
            nulls.as_mut_ptr(),
            1,
            dims.as_mut_ptr(),
            lower_bounds.as_mut_ptr(),
            element,
            length.into(),
            by_value,
            align,
        );
        DatumWithOid::new(pg_sys::Datum::from(array), array_oid)
    }
}

pub fn texts<'a>(values: impl Iterator<Item = Option<&'a [u8]>>) -> DatumWithOid<'static> {
    array_arg(values.map(|v| v.map(text_datum)).collect(), pg_sys::TEXTOID, pg_sys::TEXTARRAYOID)
}

pub fn integers(values: impl Iterator<Item = i32>) -> DatumWithOid<'static> {
    array_arg(values.map(|v| Some(pg_sys::Datum::from(v))).collect(), pg_sys::INT4OID, pg_sys::INT4ARRAYOID)
}

pub fn booleans(values: impl Iterator<Item = bool>) -> DatumWithOid<'static> {
    array_arg(values.map(|v| Some(pg_sys::Datum::from(v))).collect(), pg_sys::BOOLOID, pg_sys::BOOLARRAYOID)
}

pub fn timestamps(values: impl Iterator<Item = i64>) -> DatumWithOid<'static> {
    array_arg(values.map(|v| Some(pg_sys::Datum::from(v))).collect(), pg_sys::TIMESTAMPTZOID, pg_sys::TIMESTAMPTZARRAYOID)
}

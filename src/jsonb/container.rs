//! A jsonb container read in place: its children one at a time, nothing
//! built, no allocation, every offset checked.

use super::DecodeError;

const JB_CMASK: u32 = 0x0FFF_FFFF;
const JB_FSCALAR: u32 = 0x1000_0000;
const JB_FOBJECT: u32 = 0x2000_0000;
const JB_FARRAY: u32 = 0x4000_0000;

const JENTRY_OFFLENMASK: u32 = 0x0FFF_FFFF;
const JENTRY_TYPEMASK: u32 = 0x7000_0000;
const JENTRY_HAS_OFF: u32 = 0x8000_0000;
const JENTRY_ISSTRING: u32 = 0x0000_0000;
const JENTRY_ISNUMERIC: u32 = 0x1000_0000;
const JENTRY_ISBOOL_FALSE: u32 = 0x2000_0000;
const JENTRY_ISBOOL_TRUE: u32 = 0x3000_0000;
const JENTRY_ISNULL: u32 = 0x4000_0000;
const JENTRY_ISCONTAINER: u32 = 0x5000_0000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Array,
    Object,
    /// The one-element array a top-level scalar is stored as.
    Scalar,
}

#[derive(Debug, Clone, Copy)]
pub struct Container<'a> {
    pub kind: Kind,
    /// Members (objects) or elements.
    count: usize,
    entries: &'a [u8],
    data: &'a [u8],
}

/// One child of a container.
#[derive(Debug, Clone, Copy)]
pub enum Item<'a> {
    Null,
    Bool(bool),
    /// The string's bytes (UTF-8 in a UTF8 database; not checked here).
    String(&'a [u8]),
    /// The number's numeric varlena (`exact_text`, `numeric_out` read it).
    Number(&'a [u8]),
    Container(Container<'a>),
}

pub(super) fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    bytes.get(at..at + 4).map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
}

const fn int_align(offset: usize) -> usize {
    (offset + 3) & !3
}

impl<'a> Container<'a> {
    /// The container at the start of `bytes` (a jsonb payload: the bytes after the varlena header).
    pub fn read(bytes: &'a [u8]) -> Result<Container<'a>, DecodeError> {
        let header = u32_at(bytes, 0).ok_or(DecodeError("truncated jsonb"))?;
        let count = (header & JB_CMASK) as usize;
        let kind = if header & JB_FOBJECT != 0 {
            Kind::Object
        } else if header & JB_FARRAY == 0 {
            return Err(DecodeError("not a jsonb container"));
        } else if header & JB_FSCALAR != 0 {
            Kind::Scalar
        } else {
            Kind::Array
        };
        let children = if kind == Kind::Object { count * 2 } else { count };
        let data_start = children.checked_mul(4).and_then(|n| n.checked_add(4)).ok_or(DecodeError("truncated jsonb"))?;
        let entries = bytes.get(4..data_start).ok_or(DecodeError("truncated jsonb"))?;
        Ok(Container { kind, count, entries, data: &bytes[data_start..] })
    }

    /// How many elements (or members) the container holds.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    fn entry(&self, index: usize) -> Result<u32, DecodeError> {
        u32_at(self.entries, index * 4).ok_or(DecodeError("truncated jsonb"))
    }

    /// Where child `index`'s data starts (getJsonbOffset): lengths summed
    /// back to the nearest entry that stores its end offset.
    fn start(&self, index: usize) -> Result<usize, DecodeError> {
        let mut offset = 0usize;
        for i in (0..index).rev() {
            let entry = self.entry(i)?;
            offset += (entry & JENTRY_OFFLENMASK) as usize;
            if entry & JENTRY_HAS_OFF != 0 {
                break;
            }
        }
        Ok(offset)
    }

    /// Child `index`, its data starting at `start`; also where it ends.
    #[inline]
    fn child_at(&self, index: usize, start: usize) -> Result<(Item<'a>, usize), DecodeError> {
        let entry = self.entry(index)?;
        let field = (entry & JENTRY_OFFLENMASK) as usize;
        let end = if entry & JENTRY_HAS_OFF != 0 { field } else { start + field };
        let bytes = self.data.get(start..end).ok_or(DecodeError("truncated jsonb"))?;
        // Numbers and containers start at the next 4-byte boundary.
        let aligned = || self.data.get(int_align(start)..end).ok_or(DecodeError("truncated jsonb"));
        let item = match entry & JENTRY_TYPEMASK {
            JENTRY_ISSTRING => Item::String(bytes),
            JENTRY_ISNULL => Item::Null,
            JENTRY_ISBOOL_FALSE => Item::Bool(false),
            JENTRY_ISBOOL_TRUE => Item::Bool(true),
            JENTRY_ISNUMERIC => Item::Number(aligned()?),
            JENTRY_ISCONTAINER => {
                let child = Container::read(aligned()?)?;
                if child.kind == Kind::Scalar {
                    return Err(DecodeError("not a jsonb container"));
                }
                Item::Container(child)
            }
            _ => return Err(DecodeError("unknown jsonb entry type")),
        };
        Ok((item, end))
    }

    /// Children `from..to` in storage order, the first starting at `start`.
    fn children(self, from: usize, to: usize, start: usize) -> Children<'a> {
        Children { container: self, next: from, end: to, start }
    }

    /// The elements of an array (the scalar of a raw scalar), in order.
    pub fn elements(self) -> impl Iterator<Item = Result<Item<'a>, DecodeError>> {
        let count = if self.kind == Kind::Object { 0 } else { self.count };
        self.children(0, count, 0)
    }

    /// The elements of an array from index `first` on, found without reading
    /// the ones before it (jsonb stores every 32nd element's offset).
    pub fn elements_from(self, first: usize) -> Result<impl Iterator<Item = Result<Item<'a>, DecodeError>>, DecodeError> {
        let count = if self.kind == Kind::Object { 0 } else { self.count };
        let first = first.min(count);
        let start = self.start(first)?;
        Ok(self.children(first, count, start))
    }

    /// An object's keys in storage order (jsonb's key order: shorter first, then bytewise).
    pub fn keys(self) -> impl Iterator<Item = Result<&'a [u8], DecodeError>> {
        let count = if self.kind == Kind::Object { self.count } else { 0 };
        self.children(0, count, 0).map(|key| match key? {
            Item::String(key) => Ok(key),
            _ => Err(DecodeError("object key is not a string")),
        })
    }

    /// An object's values, in the order of its keys.
    pub fn values(self) -> impl Iterator<Item = Result<Item<'a>, DecodeError>> {
        let (values, error) = match self.object_values() {
            Ok(values) => (Some(values), None),
            Err(e) => (None, Some(Err(e))),
        };
        error.into_iter().chain(values.into_iter().flatten())
    }

    /// An object's values (none for an array): they start where the keys end.
    fn object_values(self) -> Result<Children<'a>, DecodeError> {
        let count = if self.kind == Kind::Object { self.count } else { 0 };
        let start = if count == 0 { 0 } else { self.start(count)? };
        Ok(self.children(count, 2 * count, start))
    }

    /// An object's keys (none for an array) as children, not yet checked to be strings;
    /// `Children::values` continues with the values once they are read.
    pub(super) fn object_keys(self) -> Children<'a> {
        let count = if self.kind == Kind::Object { self.count } else { 0 };
        self.children(0, count, 0)
    }

    /// An object's members in storage order: key and value.
    pub fn members(self) -> impl Iterator<Item = Result<(&'a [u8], Item<'a>), DecodeError>> {
        let mut values = self.values();
        self.keys().map(move |key| {
            let key = key?;
            let value = values.next().unwrap_or(Err(DecodeError("truncated jsonb")))?;
            Ok((key, value))
        })
    }

    /// An object's members in storage order, handed to `member` (key, value)
    /// in one loop over its entries: each key starts where the last ended,
    /// each value where the last value ended (no iterator per member).
    pub fn for_each_member(
        &self,
        mut member: impl FnMut(&'a [u8], Item<'a>) -> Result<(), DecodeError>,
    ) -> Result<(), DecodeError> {
        if self.kind != Kind::Object {
            return Ok(());
        }
        let (mut key_start, mut value_start) = (0, self.start(self.count)?);
        for i in 0..self.count {
            let (key, key_end) = self.child_at(i, key_start)?;
            let (value, value_end) = self.child_at(self.count + i, value_start)?;
            (key_start, value_start) = (key_end, value_end);
            match key {
                Item::String(key) => member(key, value)?,
                _ => return Err(DecodeError("object key is not a string")),
            }
        }
        Ok(())
    }

    /// An object's member `key` (`None`: absent, or not an object).
    pub fn get(&self, key: &[u8]) -> Result<Option<Item<'a>>, DecodeError> {
        if self.kind != Kind::Object {
            return Ok(None);
        }
        for (i, name) in self.keys().enumerate() {
            if name? == key {
                let value = self.count + i;
                return self.child_at(value, self.start(value)?).map(|(item, _)| Some(item));
            }
        }
        Ok(None)
    }
}

/// Children of a container read in storage order, each starting where the last ended.
pub(super) struct Children<'a> {
    container: Container<'a>,
    next: usize,
    end: usize,
    start: usize,
}

impl<'a> Children<'a> {
    /// After an object's keys were all read: its values, from where the keys ended.
    pub(super) fn values(self) -> Children<'a> {
        debug_assert!(self.next == self.end);
        Children { next: self.end, end: 2 * self.end, ..self }
    }
}

impl<'a> Iterator for Children<'a> {
    type Item = Result<Item<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.end {
            return None;
        }
        let child = self.container.child_at(self.next, self.start);
        self.next += 1;
        Some(child.map(|(item, end)| {
            self.start = end;
            item
        }))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.end.saturating_sub(self.next);
        (left, Some(left))
    }
}

impl Item<'_> {
    /// The kind, as argument errors name it ("an object", "null", ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Item::Null => "null",
            Item::Bool(_) => "a boolean",
            Item::Number(_) => "a number",
            Item::String(_) => "a string",
            Item::Container(Container { kind: Kind::Object, .. }) => "an object",
            Item::Container(_) => "an array",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonb::encode::{encode, encode_with_stride};
    use serde_json::json;

    #[test]
    fn members_and_get_agree_wherever_offsets_are_stored() {
        let members: serde_json::Map<String, serde_json::Value> =
            (0..70).map(|i| (format!("k{i:02}"), json!(format!("v{i}")))).collect();
        let doc = serde_json::Value::Object(members);
        for stride in [1, 2, 3, 32] {
            let bytes = encode_with_stride(&doc, stride);
            let root = Container::read(&bytes).unwrap();
            assert_eq!((root.kind, root.len()), (Kind::Object, 70));
            let read: Vec<(Vec<u8>, Vec<u8>)> = root
                .members()
                .map(|m| match m.unwrap() {
                    (k, Item::String(v)) => (k.to_vec(), v.to_vec()),
                    other => panic!("{other:?}"),
                })
                .collect();
            assert_eq!(read.len(), 70, "stride {stride}");
            let mut looped = Vec::new();
            root.for_each_member(|k, v| {
                looped.push((k.to_vec(), if let Item::String(v) = v { v.to_vec() } else { panic!("{v:?}") }));
                Ok(())
            })
            .unwrap();
            assert_eq!(looped, read, "stride {stride}");
            for (i, (key, value)) in read.iter().enumerate() {
                assert_eq!(key, format!("k{i:02}").as_bytes(), "stride {stride}");
                assert_eq!(value, format!("v{i}").as_bytes(), "stride {stride}");
                assert!(matches!(root.get(key).unwrap(), Some(Item::String(v)) if v == value.as_slice()));
            }
            assert!(root.get(b"absent").unwrap().is_none());
        }
    }

    #[test]
    fn kinds_name_what_arrived() {
        let bytes = encode(&json!([null, true, 1.5, "s", [], {}]));
        let root = Container::read(&bytes).unwrap();
        let kinds: Vec<&str> = root.elements().map(|e| e.unwrap().kind()).collect();
        assert_eq!(kinds, ["null", "a boolean", "a number", "a string", "an array", "an object"]);
        let scalar = encode(&json!("x"));
        assert_eq!(Container::read(&scalar).unwrap().kind, Kind::Scalar);
    }

    #[test]
    fn truncated_containers_are_errors_not_panics() {
        let bytes = encode(&json!({"a": [1, "two", {"b": null}], "long key": 3}));
        for len in 0..bytes.len() {
            if let Ok(root) = Container::read(&bytes[..len]) {
                let _ = root.members().count();
                let _ = root.for_each_member(|_, _| Ok(()));
                let _ = root.get(b"long key");
                let _ = root.elements().count();
            }
        }
    }
}

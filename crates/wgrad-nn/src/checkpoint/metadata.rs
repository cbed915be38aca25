//! A serde data format for safetensors metadata, which is a flat map of
//! strings: a struct becomes one `{prefix}{field}` entry per field, its
//! value as text. The optimizer configs derive `Serialize`/`Deserialize`,
//! so their fields are listed once, in their definitions, instead of in a
//! hand-written encoder and decoder per optimizer.
//!
//! The text of a value is what wgrad has always written: floats in Rust's
//! shortest round-trip form (`0.001`, `1e-8`, `inf`, which JSON could not
//! hold), `true`/`false`, and tuples as `[0.9, 0.999]`; so files written
//! before the configs were serde types read the same, and files written now
//! are byte for byte what those versions wrote. Readers trim whitespace
//! and also take a tuple in parentheses, as Python prints it.

use std::collections::HashMap;
use std::fmt;

use serde::de::value::{MapDeserializer, SeqDeserializer};
use serde::de::{self, DeserializeOwned, IntoDeserializer, Visitor};
use serde::ser::{self, Impossible, Serialize};

/// Why a value could not be written or read.
#[derive(Debug)]
pub(super) enum MetaError {
    /// A field the struct needs has no entry (named without the prefix).
    Missing(&'static str),
    /// Anything else, in words.
    Other(String),
}

impl fmt::Display for MetaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetaError::Missing(field) => write!(f, "missing field '{field}'"),
            MetaError::Other(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for MetaError {}

impl ser::Error for MetaError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        MetaError::Other(msg.to_string())
    }
}

impl de::Error for MetaError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        MetaError::Other(msg.to_string())
    }

    fn missing_field(field: &'static str) -> Self {
        MetaError::Missing(field)
    }
}

/// `(prefix + field, text)` for every field of `value`, a struct of
/// numbers, booleans and tuples of numbers.
pub(super) fn to_pairs<T: Serialize>(
    value: &T,
    prefix: &str,
) -> Result<Vec<(String, String)>, String> {
    value
        .serialize(Fields { prefix })
        .map_err(|e| format!("cannot write metadata under '{prefix}': {e}"))
}

/// Reads a `T` back from the entries of `meta` named `prefix + field` (a
/// field with a further `.` belongs to something else and is skipped, as
/// are fields `T` does not have). Errors name the metadata key and value.
pub(super) fn from_pairs<T: DeserializeOwned>(
    meta: &HashMap<String, String>,
    prefix: &str,
) -> Result<T, String> {
    let entries = meta.iter().filter_map(|(key, text)| {
        let field = key.strip_prefix(prefix)?;
        (!field.contains('.')).then_some((field, Text { key, text }))
    });
    T::deserialize(MapDeserializer::new(entries)).map_err(|e| match e {
        MetaError::Missing(field) => format!("metadata lacks '{prefix}{field}'"),
        MetaError::Other(message) => message,
    })
}

fn refused(what: &str) -> MetaError {
    MetaError::Other(format!(
        "{what} cannot be stored in safetensors metadata (numbers, booleans and tuples of numbers can)"
    ))
}

/// Serializer methods that refuse their kind of value.
macro_rules! refuse {
    ($($method:ident($($arg:ty),*);)*) => {
        $(fn $method(self, $(_: $arg),*) -> Result<Self::Ok, MetaError> {
            Err(refused(stringify!($method)))
        })*
    };
}

/// Serializer methods that refuse compound values (other than the one a
/// serializer takes).
macro_rules! refuse_compound {
    () => {
        fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<Self::Ok, MetaError> {
            Err(refused("an optional value"))
        }
        fn serialize_newtype_struct<T: ?Sized + Serialize>(
            self,
            _: &'static str,
            _: &T,
        ) -> Result<Self::Ok, MetaError> {
            Err(refused("a newtype struct"))
        }
        fn serialize_newtype_variant<T: ?Sized + Serialize>(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: &T,
        ) -> Result<Self::Ok, MetaError> {
            Err(refused("an enum"))
        }
        fn serialize_tuple_struct(
            self,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeTupleStruct, MetaError> {
            Err(refused("a tuple struct"))
        }
        fn serialize_tuple_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeTupleVariant, MetaError> {
            Err(refused("an enum"))
        }
        fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, MetaError> {
            Err(refused("a map"))
        }
        fn serialize_struct_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeStructVariant, MetaError> {
            Err(refused("an enum"))
        }
    };
}

/// Serializes a struct into `(prefix + field, text)` pairs.
struct Fields<'a> {
    prefix: &'a str,
}

/// The pairs of the struct being serialized.
struct FieldList<'a> {
    prefix: &'a str,
    pairs: Vec<(String, String)>,
}

impl<'a> ser::Serializer for Fields<'a> {
    type Ok = Vec<(String, String)>;
    type Error = MetaError;
    type SerializeSeq = Impossible<Self::Ok, MetaError>;
    type SerializeTuple = Impossible<Self::Ok, MetaError>;
    type SerializeTupleStruct = Impossible<Self::Ok, MetaError>;
    type SerializeTupleVariant = Impossible<Self::Ok, MetaError>;
    type SerializeMap = Impossible<Self::Ok, MetaError>;
    type SerializeStruct = FieldList<'a>;
    type SerializeStructVariant = Impossible<Self::Ok, MetaError>;

    refuse! {
        serialize_bool(bool); serialize_i8(i8); serialize_i16(i16); serialize_i32(i32);
        serialize_i64(i64); serialize_u8(u8); serialize_u16(u16); serialize_u32(u32);
        serialize_u64(u64); serialize_f32(f32); serialize_f64(f64); serialize_char(char);
        serialize_str(&str); serialize_bytes(&[u8]); serialize_none(); serialize_unit();
        serialize_unit_struct(&'static str);
        serialize_unit_variant(&'static str, u32, &'static str);
    }
    refuse_compound!();

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, MetaError> {
        Err(refused("a sequence outside a struct"))
    }

    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, MetaError> {
        Err(refused("a tuple outside a struct"))
    }

    fn serialize_struct(
        self,
        _: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStruct, MetaError> {
        Ok(FieldList {
            prefix: self.prefix,
            pairs: Vec::with_capacity(len),
        })
    }
}

impl ser::SerializeStruct for FieldList<'_> {
    type Ok = Vec<(String, String)>;
    type Error = MetaError;

    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), MetaError> {
        let text = value
            .serialize(ValueText { in_list: false })
            .map_err(|e| MetaError::Other(format!("field '{key}': {e}")))?;
        self.pairs.push((format!("{}{key}", self.prefix), text));
        Ok(())
    }

    fn end(self) -> Result<Self::Ok, MetaError> {
        Ok(self.pairs)
    }
}

/// Serializes one field's value as its metadata text.
struct ValueText {
    /// Inside a tuple: lists do not nest.
    in_list: bool,
}

/// The items of a tuple being serialized.
struct ListText {
    items: Vec<String>,
}

impl ser::Serializer for ValueText {
    type Ok = String;
    type Error = MetaError;
    type SerializeSeq = ListText;
    type SerializeTuple = ListText;
    type SerializeTupleStruct = Impossible<String, MetaError>;
    type SerializeTupleVariant = Impossible<String, MetaError>;
    type SerializeMap = Impossible<String, MetaError>;
    type SerializeStruct = Impossible<String, MetaError>;
    type SerializeStructVariant = Impossible<String, MetaError>;

    fn serialize_bool(self, v: bool) -> Result<String, MetaError> {
        Ok(v.to_string())
    }
    fn serialize_i64(self, v: i64) -> Result<String, MetaError> {
        Ok(v.to_string())
    }
    fn serialize_u64(self, v: u64) -> Result<String, MetaError> {
        Ok(v.to_string())
    }
    fn serialize_i32(self, v: i32) -> Result<String, MetaError> {
        self.serialize_i64(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<String, MetaError> {
        self.serialize_u64(v.into())
    }
    // Rust's shortest round-trip form: parses back to the same bits, and
    // writes non-finite values (`inf`, `NaN`), which validation allows for
    // some hyper-parameters.
    fn serialize_f64(self, v: f64) -> Result<String, MetaError> {
        Ok(format!("{v:?}"))
    }
    fn serialize_f32(self, v: f32) -> Result<String, MetaError> {
        Ok(format!("{v:?}"))
    }

    refuse! {
        serialize_i8(i8); serialize_i16(i16); serialize_u8(u8); serialize_u16(u16);
        serialize_char(char); serialize_str(&str); serialize_bytes(&[u8]);
        serialize_none(); serialize_unit(); serialize_unit_struct(&'static str);
        serialize_unit_variant(&'static str, u32, &'static str);
    }
    refuse_compound!();

    fn serialize_seq(self, len: Option<usize>) -> Result<ListText, MetaError> {
        if self.in_list {
            return Err(refused("a nested list"));
        }
        Ok(ListText {
            items: Vec::with_capacity(len.unwrap_or(0)),
        })
    }

    fn serialize_tuple(self, len: usize) -> Result<ListText, MetaError> {
        self.serialize_seq(Some(len))
    }

    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, MetaError> {
        Err(refused("a nested struct"))
    }
}

impl ListText {
    fn push<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), MetaError> {
        self.items
            .push(value.serialize(ValueText { in_list: true })?);
        Ok(())
    }

    fn text(self) -> String {
        format!("[{}]", self.items.join(", "))
    }
}

impl ser::SerializeSeq for ListText {
    type Ok = String;
    type Error = MetaError;

    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), MetaError> {
        self.push(value)
    }

    fn end(self) -> Result<String, MetaError> {
        Ok(self.text())
    }
}

impl ser::SerializeTuple for ListText {
    type Ok = String;
    type Error = MetaError;

    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), MetaError> {
        self.push(value)
    }

    fn end(self) -> Result<String, MetaError> {
        Ok(self.text())
    }
}

/// One metadata value being read, with its key for error messages.
#[derive(Clone, Copy)]
struct Text<'a> {
    key: &'a str,
    text: &'a str,
}

impl<'a> Text<'a> {
    fn trimmed(&self) -> &'a str {
        self.text.trim()
    }

    /// The error for a value that is not what the field needs.
    fn not(&self, what: &str) -> MetaError {
        MetaError::Other(format!(
            "metadata '{}' = {:?} is not {what}",
            self.key, self.text
        ))
    }

    /// Names the key and value in an error a visitor raised.
    fn locate(&self, e: MetaError) -> MetaError {
        match e {
            MetaError::Other(message) => MetaError::Other(format!(
                "metadata '{}' = {:?}: {message}",
                self.key, self.text
            )),
            missing => missing,
        }
    }

    /// The items of a list (`[a, b]` or `(a, b)`), if the value is one.
    fn items(&self) -> Option<Vec<&'a str>> {
        let t = self.trimmed();
        let inner = t
            .strip_prefix('[')
            .and_then(|r| r.strip_suffix(']'))
            .or_else(|| t.strip_prefix('(').and_then(|r| r.strip_suffix(')')))?;
        if inner.trim().is_empty() {
            return Some(Vec::new());
        }
        Some(inner.split(',').map(str::trim).collect())
    }
}

impl<'de> IntoDeserializer<'de, MetaError> for Text<'_> {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

impl<'de> de::Deserializer<'de> for Text<'_> {
    type Error = MetaError;

    /// Untyped: a boolean, an integer, a float, a list, else the text.
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, MetaError> {
        let t = self.trimmed();
        let result = if let Ok(b) = t.parse::<bool>() {
            visitor.visit_bool(b)
        } else if let Ok(u) = t.parse::<u64>() {
            visitor.visit_u64(u)
        } else if let Ok(i) = t.parse::<i64>() {
            visitor.visit_i64(i)
        } else if let Ok(x) = t.parse::<f64>() {
            visitor.visit_f64(x)
        } else if self.items().is_some() {
            return self.deserialize_seq(visitor);
        } else {
            visitor.visit_str(t)
        };
        result.map_err(|e| self.locate(e))
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, MetaError> {
        let b = self.trimmed().parse().map_err(|_| self.not("true/false"))?;
        visitor.visit_bool(b).map_err(|e| self.locate(e))
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, MetaError> {
        let x = self.trimmed().parse().map_err(|_| self.not("a number"))?;
        visitor.visit_f64(x).map_err(|e| self.locate(e))
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, MetaError> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, MetaError> {
        let items = self.items().ok_or_else(|| self.not("a list"))?;
        let items = items.into_iter().map(|text| Text {
            key: self.key,
            text,
        });
        // The items' own errors already name the key.
        visitor
            .visit_seq(SeqDeserializer::new(items))
            .map_err(|e| match e {
                MetaError::Other(m) if m.starts_with("metadata '") => MetaError::Other(m),
                other => self.locate(other),
            })
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, MetaError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, MetaError> {
        // A key that is present holds a value.
        visitor.visit_some(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, MetaError> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 char str string bytes byte_buf
        unit unit_struct newtype_struct tuple_struct map struct enum identifier
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Config {
        lr: f64,
        betas: (f64, f64),
        nesterov: bool,
        steps: u32,
    }

    const CONFIG: Config = Config {
        lr: 1e-8,
        betas: (0.9, f64::INFINITY),
        nesterov: true,
        steps: 7,
    };

    fn meta(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn fields_become_prefixed_entries_in_the_format_wgrad_always_wrote() {
        let pairs = to_pairs(&CONFIG, "optim.").unwrap();
        let want = [
            ("optim.lr", "1e-8"),
            ("optim.betas", "[0.9, inf]"),
            ("optim.nesterov", "true"),
            ("optim.steps", "7"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(pairs, want);
        let back: Config = from_pairs(&pairs.into_iter().collect(), "optim.").unwrap();
        assert_eq!(back, CONFIG);
    }

    #[test]
    fn reading_skips_other_keys_and_takes_python_tuples_and_spaces() {
        let m = meta(&[
            ("optim.lr", " 1e-8 "),
            ("optim.betas", "(0.9, inf)"),
            ("optim.nesterov", "true"),
            ("optim.steps", "7"),
            ("optim.type", "SGD"),
            ("optim.group.1.lr", "oops"),
            ("epoch", "3"),
        ]);
        assert_eq!(from_pairs::<Config>(&m, "optim.").unwrap(), CONFIG);
    }

    #[test]
    fn errors_name_the_key_and_the_value() {
        let good = to_pairs(&CONFIG, "p.").unwrap();
        let with = |key: &str, value: Option<&str>| {
            let mut m: HashMap<String, String> = good.iter().cloned().collect();
            match value {
                Some(v) => m.insert(key.to_string(), v.to_string()),
                None => m.remove(key),
            };
            from_pairs::<Config>(&m, "p.").unwrap_err()
        };
        assert_eq!(
            with("p.lr", Some("fast")),
            r#"metadata 'p.lr' = "fast" is not a number"#
        );
        assert_eq!(
            with("p.nesterov", Some("1")),
            r#"metadata 'p.nesterov' = "1" is not true/false"#
        );
        assert_eq!(with("p.lr", None), "metadata lacks 'p.lr'");
        let msg = with("p.betas", Some("[0.9]"));
        assert!(
            msg.starts_with(r#"metadata 'p.betas' = "[0.9]": "#),
            "{msg}"
        );
        let msg = with("p.betas", Some("[0.9, x]"));
        assert_eq!(msg, r#"metadata 'p.betas' = "x" is not a number"#);
        let msg = with("p.steps", Some("-1"));
        assert!(msg.starts_with(r#"metadata 'p.steps' = "-1": "#), "{msg}");
    }

    #[test]
    fn values_that_metadata_cannot_hold_are_errors() {
        #[derive(serde::Serialize)]
        struct Named {
            name: &'static str,
        }
        let e = to_pairs(&Named { name: "x" }, "p.").unwrap_err();
        assert!(e.contains("field 'name'"), "{e}");
        assert!(to_pairs(&3.0f64, "p.").is_err());
    }
}

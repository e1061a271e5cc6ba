//! The serde compound traits (seq, tuple, struct, map, …) of a key serializer: every element,
//! field, map key and map value is one more element of the tuple, so each impl forwards to
//! the compound's `element` and `end` to its `close`. Shared by the ordered serializer
//! (`serializer.rs`) and the ascending-only one (`asc.rs`).

/// Implements the seven `serde::ser::Serialize*` compound traits for `$ty`, which has
/// `fn element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<()>` and
/// `fn close(self) -> Result<()>` (both with the error type `$err`); `$inline` is the inline
/// attribute of every method.
macro_rules! compound_impls {
    ($ty:ty, $err:ty, #[$inline:meta]) => {
        $crate::codec::native_serde::compound::compound_impls!(@one $ty, $err, #[$inline], SerializeSeq, serialize_element);
        $crate::codec::native_serde::compound::compound_impls!(@one $ty, $err, #[$inline], SerializeTuple, serialize_element);
        $crate::codec::native_serde::compound::compound_impls!(@one $ty, $err, #[$inline], SerializeTupleStruct, serialize_field);
        $crate::codec::native_serde::compound::compound_impls!(@one $ty, $err, #[$inline], SerializeTupleVariant, serialize_field);
        $crate::codec::native_serde::compound::compound_impls!(@named $ty, $err, #[$inline], SerializeStruct);
        $crate::codec::native_serde::compound::compound_impls!(@named $ty, $err, #[$inline], SerializeStructVariant);

        impl ser::SerializeMap for $ty {
            type Ok = ();
            type Error = $err;
            #[$inline]
            fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> std::result::Result<(), $err> {
                self.element(k)
            }
            #[$inline]
            fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> std::result::Result<(), $err> {
                self.element(v)
            }
            #[$inline]
            fn end(self) -> std::result::Result<(), $err> {
                self.close()
            }
        }
    };
    (@one $ty:ty, $err:ty, #[$inline:meta], $trait:ident, $method:ident) => {
        impl ser::$trait for $ty {
            type Ok = ();
            type Error = $err;
            #[$inline]
            fn $method<T: Serialize + ?Sized>(&mut self, v: &T) -> std::result::Result<(), $err> {
                self.element(v)
            }
            #[$inline]
            fn end(self) -> std::result::Result<(), $err> {
                self.close()
            }
        }
    };
    (@named $ty:ty, $err:ty, #[$inline:meta], $trait:ident) => {
        impl ser::$trait for $ty {
            type Ok = ();
            type Error = $err;
            #[$inline]
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                _key: &'static str,
                v: &T,
            ) -> std::result::Result<(), $err> {
                self.element(v)
            }
            #[$inline]
            fn end(self) -> std::result::Result<(), $err> {
                self.close()
            }
        }
    };
}
pub(super) use compound_impls;

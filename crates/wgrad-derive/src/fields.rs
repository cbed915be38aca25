//! What each field of a `#[derive(Module)]` struct is: a parameter, a
//! buffer, the training flag, a child module (one, optional or a list) or
//! something skipped, from its `#[module(...)]` attributes and its type.

use syn::spanned::Spanned;
use syn::{Attribute, Field, GenericArgument, Member, PathArguments, Type};

/// The role of one field.
pub enum Role {
    /// `Tensor`, `Option<Tensor>`, `Vec<Tensor>` or `[Tensor; N]`: learned.
    Parameter,
    /// The same types marked `#[module(buffer)]`: saved and moved, not learned.
    Buffer,
    /// The `bool` that holds train/eval mode.
    Training,
    /// A module (`Box<dyn Module>` included).
    Child,
    /// `Option<M>`: a child that may be absent.
    OptionalChild,
    /// `Vec<M>` or `[M; N]`: children named `field.0`, `field.1`, ...
    ChildList,
    /// Configuration (scalars, strings, `#[module(skip)]`): not visited.
    Skipped,
}

/// A classified field.
pub struct ModuleField {
    /// `name` or the index of a tuple struct's field (`self.#member`).
    pub member: Member,
    /// The name its tensors or children go under: the field's name, or its
    /// index in a tuple struct.
    pub label: String,
    pub ty: Type,
    pub role: Role,
    /// `#[module(flatten)]` on a child: its names are not prefixed with
    /// the field's (`Sequential`'s `layers` give `0.weight`, a wrapper's
    /// inner layer gives `weight`).
    pub flatten: bool,
}

/// The `#[module(...)]` flags of a field.
#[derive(Default)]
struct FieldFlags {
    buffer: bool,
    skip: bool,
    training: bool,
    flatten: bool,
}

fn field_flags(attrs: &[Attribute]) -> syn::Result<FieldFlags> {
    let mut flags = FieldFlags::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("module")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("buffer") {
                flags.buffer = true;
            } else if meta.path.is_ident("skip") {
                flags.skip = true;
            } else if meta.path.is_ident("training") {
                flags.training = true;
            } else if meta.path.is_ident("flatten") {
                flags.flatten = true;
            } else {
                return Err(meta.error(
                    "unknown field attribute: expected `#[module(buffer)]`, \
                     `#[module(skip)]`, `#[module(training)]` or `#[module(flatten)]`",
                ));
            }
            Ok(())
        })?;
    }
    let set = [flags.buffer, flags.skip, flags.training, flags.flatten];
    if set.iter().filter(|&&f| f).count() > 1 {
        let at = attrs.iter().find(|a| a.path().is_ident("module"));
        return Err(syn::Error::new(
            at.map_or_else(proc_macro2::Span::call_site, |a| a.span()),
            "a field is at most one of `buffer`, `skip`, `training` and `flatten`",
        ));
    }
    Ok(flags)
}

/// Classifies `field`, the `index`-th of its struct.
pub fn classify(index: usize, field: &Field) -> syn::Result<ModuleField> {
    let flags = field_flags(&field.attrs)?;
    let (member, label) = match &field.ident {
        Some(ident) => (Member::Named(ident.clone()), ident.to_string()),
        None => (Member::Unnamed(index.into()), index.to_string()),
    };
    let is_training_name = matches!(&member, Member::Named(i) if i == "training");
    let ty = field.ty.clone();
    let role = if flags.skip {
        Role::Skipped
    } else if flags.training {
        if !is_named(&ty, "bool") {
            return Err(syn::Error::new_spanned(
                &ty,
                "#[module(training)] marks the `bool` that holds the training mode",
            ));
        }
        Role::Training
    } else if flags.buffer {
        if !holds_tensors(&ty) {
            return Err(syn::Error::new_spanned(
                &ty,
                "#[module(buffer)] needs a `Tensor`, `Option<Tensor>`, `Vec<Tensor>` or \
                 `[Tensor; N]` field",
            ));
        }
        Role::Buffer
    } else if is_training_name && is_named(&ty, "bool") {
        Role::Training
    } else if holds_tensors(&ty) {
        Role::Parameter
    } else if is_plain(&ty) {
        Role::Skipped
    } else if let Some(_inner) = wrapped(&ty, "Option") {
        Role::OptionalChild
    } else if wrapped(&ty, "Vec").is_some() || matches!(ty, Type::Array(_)) {
        Role::ChildList
    } else {
        Role::Child
    };
    if flags.flatten && !matches!(role, Role::Child | Role::OptionalChild | Role::ChildList) {
        return Err(syn::Error::new_spanned(
            &ty,
            "#[module(flatten)] marks a child module (or a `Vec`/`Option` of them) whose \
             names go unprefixed",
        ));
    }
    Ok(ModuleField {
        member,
        label,
        ty,
        role,
        flatten: flags.flatten,
    })
}

/// The element type of a child field: `M` of `Option<M>`, `Vec<M>`,
/// `[M; N]`, the field's own type otherwise (what `M: Module` bounds name).
pub fn module_type(field: &ModuleField) -> &Type {
    match field.role {
        Role::OptionalChild => wrapped(&field.ty, "Option").unwrap_or(&field.ty),
        Role::ChildList => match &field.ty {
            Type::Array(a) => &a.elem,
            ty => wrapped(ty, "Vec").unwrap_or(ty),
        },
        _ => &field.ty,
    }
}

/// The last path segment of `ty` when it is a plain path (`a::b::Name<..>`).
fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        Type::Group(g) => last_segment(&g.elem),
        Type::Paren(p) => last_segment(&p.elem),
        _ => None,
    }
}

/// Whether `ty` is the path `name` without generic arguments.
fn is_named(ty: &Type, name: &str) -> bool {
    last_segment(ty).is_some_and(|s| s.ident == name && s.arguments.is_none())
}

/// `T` when `ty` is `wrapper<T>` (`Option<T>`, `Vec<T>`, `Box<T>`, ...).
fn wrapped<'a>(ty: &'a Type, wrapper: &str) -> Option<&'a Type> {
    let seg = last_segment(ty)?;
    if seg.ident != wrapper {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &seg.arguments else {
        return None;
    };
    let mut types = args.args.iter().filter_map(|a| match a {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    });
    types.next()
}

/// `Tensor`, `Option<Tensor>`, `Vec<Tensor>`, `[Tensor; N]`.
fn holds_tensors(ty: &Type) -> bool {
    if is_named(ty, "Tensor") {
        return true;
    }
    if let Type::Array(a) = ty {
        return is_named(&a.elem, "Tensor");
    }
    ["Option", "Vec"]
        .iter()
        .any(|w| wrapped(ty, w).is_some_and(|t| is_named(t, "Tensor")))
}

/// Scalars, strings, references, `PhantomData`, `Device`, `DType` and the
/// standard collections of them: configuration that is never a module. (Any other
/// configuration type needs `#[module(skip)]`; a proc macro sees names, not
/// trait impls.)
fn is_plain(ty: &Type) -> bool {
    const SCALARS: &[&str] = &[
        "bool", "char", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64",
        "i128", "isize", "f32", "f64", "String", "str", "PathBuf", "Path", "Duration",
        // wgrad's own non-module values that a model commonly keeps.
        "Device", "DType",
    ];
    match ty {
        // A borrowed value cannot be moved by `to_device`: it belongs to
        // someone else, like a `&'static str` name or a `&'a [usize]`.
        Type::Reference(_) | Type::Ptr(_) | Type::Never(_) => true,
        Type::Array(a) => is_plain(&a.elem),
        Type::Slice(s) => is_plain(&s.elem),
        Type::Tuple(t) => t.elems.iter().all(is_plain),
        Type::Group(g) => is_plain(&g.elem),
        Type::Paren(p) => is_plain(&p.elem),
        Type::Path(_) => {
            let Some(seg) = last_segment(ty) else {
                return false;
            };
            if seg.arguments.is_none() {
                return SCALARS.iter().any(|s| seg.ident == s);
            }
            if seg.ident == "PhantomData" {
                return true;
            }
            let PathArguments::AngleBracketed(args) = &seg.arguments else {
                return false;
            };
            const WRAPPERS: &[&str] = &["Option", "Vec", "Box", "Arc", "Rc", "VecDeque"];
            WRAPPERS.iter().any(|w| seg.ident == w)
                && args.args.iter().all(|a| match a {
                    GenericArgument::Type(t) => is_plain(t),
                    _ => true,
                })
        }
        _ => false,
    }
}

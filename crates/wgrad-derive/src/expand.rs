//! The `impl Module` that `#[derive(Module)]` writes for a struct.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Ident, Type};

use crate::fields::{ModuleField, Role, classify, module_type};

/// The path of `wgrad_nn` as the calling crate names it: `::wgrad::nn` in
/// crates that depend on the facade (the usual case, and the facade's own
/// tests), `::wgrad_nn` in crates that depend on wgrad-nn only and inside
/// wgrad-nn (which declares `extern crate self as wgrad_nn` for it).
fn nn_path() -> TokenStream {
    use proc_macro_crate::{FoundCrate, crate_name};
    let ident = |name: &str| Ident::new(name, Span::call_site());
    match crate_name("wgrad") {
        // The facade's integration tests and doctests link it as `wgrad`.
        Ok(FoundCrate::Itself) => return quote!(::wgrad::nn),
        Ok(FoundCrate::Name(name)) => {
            let name = ident(&name);
            return quote!(::#name::nn);
        }
        Err(_) => {}
    }
    match crate_name("wgrad-nn") {
        Ok(FoundCrate::Name(name)) => {
            let name = ident(&name);
            quote!(::#name)
        }
        // With neither dependency found (no Cargo manifest: a build outside
        // cargo) `wgrad_nn` is still the likeliest name.
        Ok(FoundCrate::Itself) | Err(_) => quote!(::wgrad_nn),
    }
}

/// The struct attributes: `#[module(forward = method)]`, the inherent
/// method `Module::forward` calls (default `forward`);
/// `#[module(forward_relu = method)]`, the inherent method
/// `Module::forward_relu` calls (a module that fuses a following ReLU into
/// its own pass); `#[module(relu)]`, the module is a plain ReLU
/// (`Module::is_relu`), which a `Sequential` folds into the module before.
struct StructAttrs {
    forward: Ident,
    forward_relu: Option<Ident>,
    relu: bool,
}

fn struct_attrs(input: &DeriveInput) -> syn::Result<StructAttrs> {
    let mut attrs = StructAttrs {
        forward: Ident::new("forward", Span::call_site()),
        forward_relu: None,
        relu: false,
    };
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("module")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("forward") {
                attrs.forward = meta.value()?.parse()?;
                Ok(())
            } else if meta.path.is_ident("forward_relu") {
                attrs.forward_relu = Some(meta.value()?.parse()?);
                Ok(())
            } else if meta.path.is_ident("relu") {
                attrs.relu = true;
                Ok(())
            } else {
                Err(meta.error(
                    "unknown struct attribute: expected `#[module(forward = method_name)]`, \
                     `#[module(forward_relu = method_name)]` or `#[module(relu)]`",
                ))
            }
        })?;
    }
    Ok(attrs)
}

/// Whether `ty` names one of `params` (then a child of that type needs a
/// `Module` bound on the impl).
fn mentions_param(ty: &Type, params: &[Ident]) -> bool {
    fn walk(tokens: TokenStream, params: &[Ident]) -> bool {
        tokens.into_iter().any(|tt| match tt {
            proc_macro2::TokenTree::Ident(i) => params.contains(&i),
            // Arrays, tuples and parentheses nest their tokens in a group.
            proc_macro2::TokenTree::Group(g) => walk(g.stream(), params),
            _ => false,
        })
    }
    !params.is_empty() && walk(ty.to_token_stream(), params)
}

/// The whole derive: the impl, or the error as a `compile_error!`.
pub fn derive(input: DeriveInput) -> syn::Result<TokenStream> {
    // Tuple structs name their fields by index (`0.weight`), unless the
    // field is #[module(flatten)] (a wrapper such as `BatchNorm2d(BatchNorm)`).
    let fields: Vec<&syn::Field> = match &input.data {
        Data::Struct(s) => match &s.fields {
            Fields::Named(named) => named.named.iter().collect(),
            Fields::Unnamed(unnamed) => unnamed.unnamed.iter().collect(),
            Fields::Unit => Vec::new(),
        },
        Data::Enum(e) => {
            return Err(syn::Error::new_spanned(
                e.enum_token,
                "#[derive(Module)] works on structs only; write `impl Module` by hand for an enum",
            ));
        }
        Data::Union(u) => {
            return Err(syn::Error::new_spanned(
                u.union_token,
                "#[derive(Module)] works on structs only",
            ));
        }
    };
    let fields = fields
        .into_iter()
        .enumerate()
        .map(|(i, f)| classify(i, f))
        .collect::<syn::Result<Vec<_>>>()?;
    let flags: Vec<&ModuleField> = fields
        .iter()
        .filter(|f| matches!(f.role, Role::Training))
        .collect();
    if let [_, second, ..] = flags.as_slice() {
        return Err(syn::Error::new_spanned(
            &second.member,
            "a second training flag: one `bool` field holds the mode (`training`, or the \
             one marked #[module(training)])",
        ));
    }
    let nn = nn_path();
    let attrs = struct_attrs(&input)?;
    let method = attrs.forward.clone();

    let type_params: Vec<Ident> = input
        .generics
        .type_params()
        .map(|p| p.ident.clone())
        .collect();
    let mut generics = input.generics.clone();
    let where_clause = generics.make_where_clause();
    for f in &fields {
        if matches!(f.role, Role::Child | Role::OptionalChild | Role::ChildList) {
            let ty = module_type(f);
            if mentions_param(ty, &type_params) {
                where_clause
                    .predicates
                    .push(syn::parse_quote!(#ty: #nn::Module));
            }
        }
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let name = &input.ident;

    let p = quote!(#nn::__private);
    let own = |role: fn(&Role) -> bool| -> Vec<TokenStream> {
        fields
            .iter()
            .filter(|f| role(&f.role))
            .map(|f| {
                let id = &f.member;
                let label = &f.label;
                quote_spanned!(f.ty.span()=> #p::TensorSlots::push_named(&self.#id, #label, &mut __out);)
            })
            .collect()
    };
    let is_param = |r: &Role| matches!(r, Role::Parameter);
    let is_buffer = |r: &Role| matches!(r, Role::Buffer);
    let own_params = own(is_param);
    let own_buffers = own(is_buffer);
    // Each child's names under `field.` (`field.i.` in a list); flattened:
    // as they are (`i.` in a list).
    let children = |method: TokenStream| -> Vec<TokenStream> {
        fields
            .iter()
            .filter_map(|f| {
                let id = &f.member;
                let label = &f.label;
                let ty = module_type(f);
                let call = quote_spanned!(ty.span()=> <#ty as #nn::Module>::#method);
                Some(match (&f.role, f.flatten) {
                    (Role::Child, false) => quote! {
                        #p::push_prefixed(&mut __out, #label, #call(&self.#id));
                    },
                    (Role::Child, true) => quote! {
                        __out.extend(#call(&self.#id));
                    },
                    (Role::OptionalChild, false) => quote! {
                        if let ::core::option::Option::Some(__m) = &self.#id {
                            #p::push_prefixed(&mut __out, #label, #call(__m));
                        }
                    },
                    (Role::OptionalChild, true) => quote! {
                        if let ::core::option::Option::Some(__m) = &self.#id {
                            __out.extend(#call(__m));
                        }
                    },
                    (Role::ChildList, false) => quote! {
                        for (__i, __m) in self.#id.iter().enumerate() {
                            #p::push_prefixed(&mut __out, &::std::format!("{}.{}", #label, __i), #call(__m));
                        }
                    },
                    (Role::ChildList, true) => quote! {
                        for (__i, __m) in self.#id.iter().enumerate() {
                            #p::push_prefixed(&mut __out, &::std::format!("{}", __i), #call(__m));
                        }
                    },
                    _ => return None,
                })
            })
            .collect()
    };
    let child_params = children(quote!(named_parameters));
    let child_buffers = children(quote!(named_buffers));
    let child_state = children(quote!(named_state));

    let train_children: Vec<TokenStream> = fields
        .iter()
        .filter_map(|f| {
            let id = &f.member;
            let ty = module_type(f);
            let call = quote_spanned!(ty.span()=> <#ty as #nn::Module>::train);
            Some(match f.role {
                Role::Training => quote!(self.#id = on;),
                Role::Child => quote!(#call(&mut self.#id, on);),
                Role::OptionalChild => quote! {
                    if let ::core::option::Option::Some(__m) = &mut self.#id {
                        #call(__m, on);
                    }
                },
                Role::ChildList => quote! {
                    for __m in self.#id.iter_mut() {
                        #call(__m, on);
                    }
                },
                _ => return None,
            })
        })
        .collect();
    let move_fields: Vec<TokenStream> = fields
        .iter()
        .filter_map(|f| {
            let id = &f.member;
            let ty = module_type(f);
            let call = quote_spanned!(ty.span()=> <#ty as #nn::Module>::to_device);
            Some(match f.role {
                Role::Parameter | Role::Buffer => {
                    quote!(#p::TensorSlots::move_to(&mut self.#id, device)?;)
                }
                Role::Child => quote!(#call(&mut self.#id, device)?;),
                Role::OptionalChild => quote! {
                    if let ::core::option::Option::Some(__m) = &mut self.#id {
                        #call(__m, device)?;
                    }
                },
                Role::ChildList => quote! {
                    for __m in self.#id.iter_mut() {
                        #call(__m, device)?;
                    }
                },
                _ => return None,
            })
        })
        .collect();
    let is_training = is_training_body(&fields, &nn);

    // `Self::#method` finds the inherent method first; without one it would
    // find this very trait method and recurse forever, which the lint turns
    // into a compile error.
    // The method is spanned at the struct's name (or the attribute's
    // method name): lints are silent inside a macro's own tokens.
    let span = if method == "forward" {
        name.span()
    } else {
        method.span()
    };
    let forward = quote_spanned! {span=>
        #[deny(unconditional_recursion)]
        fn forward(&self, x: &#p::Tensor) -> #p::Result<#p::Tensor> {
            Self::#method(self, x)
        }
    };
    let forward_relu = attrs.forward_relu.map(|m| {
        quote_spanned! {m.span()=>
            #[deny(unconditional_recursion)]
            fn forward_relu(&self, x: &#p::Tensor) -> #p::Result<#p::Tensor> {
                Self::#m(self, x)
            }
        }
    });
    let is_relu = attrs.relu.then(|| {
        quote! {
            fn is_relu(&self) -> bool {
                true
            }
        }
    });
    Ok(quote! {
        #[automatically_derived]
        impl #impl_generics #nn::Module for #name #ty_generics #where_clause {
            #forward
            #forward_relu
            #is_relu

            fn named_parameters(&self) -> ::std::vec::Vec<(::std::string::String, #p::Tensor)> {
                let mut __out = ::std::vec::Vec::new();
                #(#own_params)*
                #(#child_params)*
                #p::unique_parameters(__out)
            }

            fn named_buffers(&self) -> ::std::vec::Vec<(::std::string::String, #p::Tensor)> {
                let mut __out = ::std::vec::Vec::new();
                #(#own_buffers)*
                #(#child_buffers)*
                __out
            }

            fn named_state(&self) -> ::std::vec::Vec<(::std::string::String, #p::Tensor)> {
                let mut __out = ::std::vec::Vec::new();
                #(#own_params)*
                #(#own_buffers)*
                #(#child_state)*
                #p::unique_parameters(__out)
            }

            fn train(&mut self, on: bool) {
                #(#train_children)*
                let _ = on;
            }

            fn is_training(&self) -> bool {
                #is_training
            }

            fn to_device(&mut self, device: &#p::Device) -> #p::Result<()> {
                #(#move_fields)*
                let _ = device;
                ::core::result::Result::Ok(())
            }
        }
    })
}

/// The flag; without one, the first child's mode; without children, true.
fn is_training_body(fields: &[ModuleField], nn: &TokenStream) -> TokenStream {
    if let Some(flag) = fields.iter().find(|f| matches!(f.role, Role::Training)) {
        let id = &flag.member;
        return quote!(self.#id);
    }
    for f in fields {
        let id = &f.member;
        let ty = module_type(f);
        let call = quote_spanned!(ty.span()=> <#ty as #nn::Module>::is_training);
        match f.role {
            Role::Child => return quote!(#call(&self.#id)),
            Role::OptionalChild => {
                return quote!(self.#id.as_ref().map_or(true, |__m| #call(__m)));
            }
            Role::ChildList => {
                return quote!(self.#id.iter().next().map_or(true, |__m| #call(__m)));
            }
            _ => {}
        }
    }
    quote!(true)
}

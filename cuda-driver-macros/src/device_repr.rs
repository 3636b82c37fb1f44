//! `#[derive(DeviceRepr)]`.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Error};

/// The representations of `#[repr(..)]` on the type.
fn reprs(input: &DeriveInput) -> syn::Result<Vec<String>> {
    let mut out = Vec::new();
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("repr")) {
        attr.parse_nested_meta(|meta| {
            if let Some(id) = meta.path.get_ident() {
                out.push(id.to_string());
            }
            // `align(8)`, `packed(2)`: the argument does not matter here.
            if meta.input.peek(syn::token::Paren) {
                let content;
                syn::parenthesized!(content in meta.input);
                content.parse::<TokenStream>()?;
            }
            Ok(())
        })?;
    }
    Ok(out)
}

pub fn expand(input: &DeriveInput) -> syn::Result<TokenStream> {
    let name = &input.ident;
    let fields =
        match &input.data {
            Data::Struct(s) => &s.fields,
            Data::Enum(e) => return Err(Error::new(
                e.enum_token.span(),
                "DeviceRepr cannot be derived for an enum: the device can write a value that no \
                 variant has. Use a #[repr(transparent)] struct over the integer",
            )),
            Data::Union(u) => {
                return Err(Error::new(
                    u.union_token.span(),
                    "DeviceRepr cannot be derived for a union; implement it by hand if every bit \
                 pattern is valid",
                ))
            }
        };
    if !input.generics.params.is_empty() {
        return Err(Error::new(
            input.generics.span(),
            "DeviceRepr cannot be derived for a generic type (its padding cannot be checked); \
             implement it by hand",
        ));
    }
    let reprs = reprs(input)?;
    if !reprs.iter().any(|r| r == "C" || r == "transparent") {
        return Err(Error::new(
            name.span(),
            format!(
                "DeviceRepr needs a layout the device shares: add #[repr(C)] to `{name}` \
                 (Rust's own layout may reorder fields)"
            ),
        ));
    }
    let tys: Vec<_> = fields.iter().map(|f| &f.ty).collect();
    let field_checks = tys.iter().map(|ty| {
        quote_spanned! {ty.span()=>
            assert_device_repr::<#ty>();
        }
    });
    let message = format!(
        "`{name}` has padding, whose bytes are uninitialised: add explicit fields for it \
         (#[derive(DeviceRepr)])"
    );
    // Every path is absolute (`::core::assert!`, not `assert!`): the expansion is resolved in
    // the user's scope, where a `macro_rules! assert` that checks nothing would otherwise
    // turn the padding check off.
    Ok(quote! {
        const _: () = {
            fn assert_device_repr<T: ::cuda_driver::DeviceRepr>() {}
            fn assert_fields() {
                #(#field_checks)*
            }
            ::core::assert!(
                ::core::mem::size_of::<#name>() == 0 #(+ ::core::mem::size_of::<#tys>())*,
                #message
            );
        };
        // SAFETY: checked above, at compile time: a #[repr(C)] (or transparent) struct
        // without padding whose fields are all DeviceRepr accepts every bit pattern.
        unsafe impl ::cuda_driver::DeviceRepr for #name {}
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proc_macro2::{Spacing, TokenTree};

    /// The paths of `tokens` that a user's scope could change: a macro called by a path that
    /// does not start with `::` (`assert!`), or such a path that starts with a name of std's
    /// prelude, `core` or `std` (`Option`, `core::mem::size_of`).
    fn unqualified_paths(tokens: TokenStream) -> Vec<String> {
        #[rustfmt::skip]
        const PRELUDE: &[&str] = &[
            "core", "std", "alloc", "Option", "Some", "None", "Result", "Ok", "Err", "Vec",
            "String", "Box", "ToString", "ToOwned", "Clone", "Copy", "Send", "Sync", "Sized",
            "Unpin", "Drop", "Fn", "FnMut", "FnOnce", "Default", "Into", "From", "TryInto",
            "TryFrom", "AsRef", "AsMut", "Iterator", "IntoIterator", "Extend", "PartialEq",
            "Eq", "PartialOrd", "Ord", "drop", "size_of", "align_of",
        ];
        fn walk(tokens: TokenStream, found: &mut Vec<String>) {
            let t: Vec<TokenTree> = tokens.into_iter().collect();
            let punct = |j: usize, c: char, s: Spacing| match t.get(j) {
                Some(TokenTree::Punct(p)) => p.as_char() == c && p.spacing() == s,
                _ => false,
            };
            // `::` ending just before `j`.
            let colons = |j: usize| {
                j >= 2 && punct(j - 2, ':', Spacing::Joint) && punct(j - 1, ':', Spacing::Alone)
            };
            for (i, tree) in t.iter().enumerate() {
                match tree {
                    TokenTree::Group(g) => walk(g.stream(), found),
                    // The last segment of a path: `name` in `a::b::name`.
                    TokenTree::Ident(_) if !colons(i + 3) => {
                        let mut start = i;
                        while colons(start)
                            && start >= 3
                            && matches!(t[start - 3], TokenTree::Ident(_))
                        {
                            start -= 3;
                        }
                        let is_macro = punct(i + 1, '!', Spacing::Alone);
                        let first = t[start].to_string();
                        if !colons(start) && (is_macro || PRELUDE.contains(&first.as_str())) {
                            found.push(t[start..=i].iter().map(ToString::to_string).collect());
                        }
                    }
                    _ => {}
                }
            }
        }
        let mut found = Vec::new();
        walk(tokens, &mut found);
        found
    }

    #[test]
    fn the_checker_finds_bare_paths() {
        let found = unqualified_paths(quote! {
            const _: () = { assert!(x); ::core::assert!(y); };
            fn f() -> Option<u8> { core::mem::drop(1); ::core::option::Option::Some(1) }
            impl ::core::clone::Clone for X {}
            let _ = a != b;
        });
        assert_eq!(found, ["assert", "Option", "core::mem::drop"]);
    }

    #[test]
    fn the_expansion_names_everything_by_its_full_path() {
        for src in [
            quote! {
                #[repr(C)]
                struct P { a: f32, b: [u32; 3], c: u64 }
            },
            quote! {
                #[repr(transparent)]
                struct H(u64);
            },
        ] {
            let out = expand(&syn::parse2(src).unwrap()).unwrap();
            let text = out.to_string();
            assert_eq!(unqualified_paths(out), Vec::<String>::new(), "{text}");
            assert!(text.contains(":: core :: assert !"), "{text}");
        }
    }

    fn expand_str(src: TokenStream) -> Result<String, String> {
        expand(&syn::parse2(src).unwrap())
            .map(|t| t.to_string())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_repr_c_struct_gets_the_impl_and_the_checks() {
        let out = expand_str(quote! {
            #[repr(C)]
            struct P { a: f32, b: [u32; 3] }
        })
        .unwrap();
        assert!(
            out.contains("unsafe impl :: cuda_driver :: DeviceRepr for P { }"),
            "{out}"
        );
        assert!(
            out.contains("assert_device_repr :: < [u32 ; 3] > ()"),
            "{out}"
        );
        assert!(
            out.contains("size_of :: < P > () == 0 + :: core :: mem :: size_of :: < f32 > ()"),
            "{out}"
        );
    }

    #[test]
    fn refuses_what_it_cannot_check() {
        for (src, err) in [
            (
                quote!(
                    struct P {
                        a: f32,
                    }
                ),
                "add #[repr(C)]",
            ),
            (
                quote!(
                    #[repr(packed)]
                    struct P {
                        a: f32,
                    }
                ),
                "add #[repr(C)]",
            ),
            (
                quote!(
                    #[repr(C)]
                    enum E {
                        A,
                    }
                ),
                "enum",
            ),
            (quote!(#[repr(C)] union U { a: f32 }), "union"),
            (
                quote!(
                    #[repr(C)]
                    struct P<T> {
                        a: T,
                    }
                ),
                "generic",
            ),
        ] {
            let e = expand_str(src).unwrap_err();
            assert!(e.contains(err), "{e}");
        }
        let aligned = expand_str(quote!(
            #[repr(C, align(16))]
            struct P {
                a: f32,
            }
        ));
        assert!(aligned.is_ok(), "{aligned:?}");
    }
}

//! C++ parameter types (from a demangled name or a user's annotation) to Rust launcher
//! types, and C++ kernel names to Rust names.

/// A kernel parameter's Rust side.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamType {
    /// A value of a Rust type with a fixed layout: numbers, `f16`/`bf16`, vector types.
    Value {
        /// The Rust type's path, as written in the generated code.
        rust: &'static str,
        /// Its size in bytes.
        size: u32,
    },
    /// A struct (or class) passed by value: a generic `DeviceRepr` parameter whose size and
    /// alignment are checked against the PTX parameter.
    Struct {
        /// The C++ type's name.
        cpp: String,
    },
    /// A typed pointer: a view of the element type.
    Pointer {
        /// The element's Rust path, or `None` for a struct element (a generic `DeviceRepr`).
        elem: Option<&'static str>,
        /// The C++ element type's name.
        cpp: String,
        /// `T*` (the kernel may write) rather than `const T*`.
        mutable: bool,
    },
    /// A pointer-sized parameter of unknown pointee (`void*`, or an `extern "C"` kernel's
    /// `.u64`): any pointer-sized kernel argument, a view of any element type or a raw
    /// `&CUdeviceptr`.
    Untyped,
}

/// A parameter's C++ spelling and its name, if the annotation gave one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CppParam {
    /// The type as written (normalised spacing).
    pub ty: String,
    /// The parameter's name, if given.
    pub name: Option<String>,
    /// Its Rust side.
    pub rust: ParamType,
}

/// The Rust path, size and alignment of a C++ scalar or vector type, by name.
pub fn known_type(name: &str) -> Option<(&'static str, u32, u32)> {
    Some(match name {
        "char" | "signed char" | "int8_t" => ("i8", 1, 1),
        "unsigned char" | "uint8_t" => ("u8", 1, 1),
        "short" | "short int" | "signed short" | "int16_t" => ("i16", 2, 2),
        "unsigned short" | "unsigned short int" | "uint16_t" => ("u16", 2, 2),
        "int" | "signed" | "signed int" | "int32_t" => ("i32", 4, 4),
        "unsigned int" | "unsigned" | "uint32_t" => ("u32", 4, 4),
        "long" | "long int" | "long long" | "long long int" | "int64_t" => ("i64", 8, 8),
        "unsigned long long" | "unsigned long long int" | "uint64_t" => ("u64", 8, 8),
        // size_t is `unsigned long` on the LP64 hosts nvcc targets (and mangles as such).
        "unsigned long" | "unsigned long int" | "size_t" => ("usize", 8, 8),
        "ptrdiff_t" | "ssize_t" => ("isize", 8, 8),
        "float" => ("f32", 4, 4),
        "double" => ("f64", 8, 8),
        "__half" | "half" => ("::cuda_driver::half::f16", 2, 2),
        "__nv_bfloat16" | "nv_bfloat16" => ("::cuda_driver::half::bf16", 2, 2),
        "char2" => ("::cuda_driver::vector::Char2", 2, 2),
        "char4" => ("::cuda_driver::vector::Char4", 4, 4),
        "uchar2" => ("::cuda_driver::vector::Uchar2", 2, 2),
        "uchar4" => ("::cuda_driver::vector::Uchar4", 4, 4),
        "short2" => ("::cuda_driver::vector::Short2", 4, 4),
        "short4" => ("::cuda_driver::vector::Short4", 8, 8),
        "ushort2" => ("::cuda_driver::vector::Ushort2", 4, 4),
        "ushort4" => ("::cuda_driver::vector::Ushort4", 8, 8),
        "int2" => ("::cuda_driver::vector::Int2", 8, 8),
        "int3" => ("::cuda_driver::vector::Int3", 12, 4),
        "int4" => ("::cuda_driver::vector::Int4", 16, 16),
        "uint2" => ("::cuda_driver::vector::Uint2", 8, 8),
        "uint3" => ("::cuda_driver::vector::Uint3", 12, 4),
        "uint4" => ("::cuda_driver::vector::Uint4", 16, 16),
        "longlong2" => ("::cuda_driver::vector::Longlong2", 16, 16),
        "ulonglong2" => ("::cuda_driver::vector::Ulonglong2", 16, 16),
        "float2" => ("::cuda_driver::vector::Float2", 8, 8),
        "float3" => ("::cuda_driver::vector::Float3", 12, 4),
        "float4" => ("::cuda_driver::vector::Float4", 16, 16),
        "double2" => ("::cuda_driver::vector::Double2", 16, 16),
        _ => return None,
    })
}

/// Words that belong to a type, never a parameter's name.
fn is_type_word(w: &str) -> bool {
    matches!(
        w,
        "const"
            | "volatile"
            | "unsigned"
            | "signed"
            | "int"
            | "long"
            | "short"
            | "char"
            | "float"
            | "double"
            | "void"
            | "bool"
            | "__restrict__"
            | "__restrict"
            | "restrict"
            | "struct"
            | "class"
    )
}

/// Splits `s` at the commas that are not inside `<>` or `()`.
pub fn split_top_level(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0i32, 0, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// Parses one C++ parameter: `const float*`, `float const*`, `float* __restrict__ out`,
/// `unsigned int n`, `Params p`, `float4`. `annotated`: a name may follow the type.
/// The error is the reason, for [`Error::Unsupported`](crate::Error::Unsupported).
pub fn parse_param(text: &str, annotated: bool) -> Result<CppParam, String> {
    // Words and stars.
    let spaced = text.replace('*', " * ").replace('&', " & ");
    let mut words: Vec<&str> = spaced.split_whitespace().collect();
    if words.is_empty() {
        return Err("empty parameter".into());
    }
    if words.contains(&"&") {
        return Err("references cannot be kernel parameters".into());
    }
    if words.iter().any(|w| w.contains('[')) {
        return Err("arrays decay to pointers: write `T*`".into());
    }
    let mut name = None;
    if annotated && words.len() >= 2 {
        let last = words[words.len() - 1];
        if last != "*"
            && !is_type_word(last)
            && last.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && last.starts_with(|c: char| !c.is_ascii_digit())
        {
            name = Some(last.to_string());
            words.pop();
        }
    }
    let stars = words.iter().filter(|w| **w == "*").count();
    let first_star = words.iter().position(|w| *w == "*").unwrap_or(words.len());
    let mut is_const = false;
    let base: Vec<&str> = words[..first_star]
        .iter()
        .copied()
        .filter(|w| match *w {
            "const" => {
                is_const = true;
                false
            }
            "volatile" | "struct" | "class" | "__restrict__" | "__restrict" | "restrict" => false,
            _ => true,
        })
        .collect();
    let base = base.join(" ");
    let ty = normalise(text, name.as_deref());
    if base.is_empty() {
        return Err("no type".into());
    }
    let rust = match stars {
        0 => match base.as_str() {
            "bool" => {
                return Err(
                    "`bool` is not DeviceRepr (the device may write any byte): pass \
                            `int` or `unsigned char`"
                        .into(),
                )
            }
            "void" => return Err("`void` is no parameter type".into()),
            _ => match known_type(&base) {
                Some((rust, size, _)) => ParamType::Value { rust, size },
                None if is_type_name(&base) => ParamType::Struct { cpp: base },
                None => return Err(format!("unknown type `{base}`")),
            },
        },
        1 => match base.as_str() {
            "void" => ParamType::Untyped,
            "bool" => return Err("`bool*`: `bool` is not DeviceRepr: use `unsigned char*`".into()),
            _ => {
                let elem = match known_type(&base) {
                    Some((rust, _, _)) => Some(rust),
                    None if is_type_name(&base) => None,
                    None => return Err(format!("unknown element type `{base}`")),
                };
                ParamType::Pointer {
                    elem,
                    cpp: base,
                    mutable: !is_const,
                }
            }
        },
        _ => {
            return Err(
                "a pointer to pointers has no view type: pass `void*` (an untyped \
                        device pointer) or annotate the kernel"
                    .into(),
            )
        }
    };
    Ok(CppParam { ty, name, rust })
}

/// A (possibly qualified, possibly templated) C++ type name that is no builtin type.
fn is_type_name(s: &str) -> bool {
    !s.is_empty()
        && !s.split(' ').any(is_type_word)
        && s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '<' | '>' | ',' | ' '))
}

fn normalise(text: &str, name: Option<&str>) -> String {
    let mut t = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some(n) = name {
        if let Some(stripped) = t.strip_suffix(n) {
            t = stripped.trim_end().to_string();
        }
    }
    t.replace(" *", "*")
}

/// A demangled kernel: its C++ name with template arguments (`scale<float>`), its base name
/// without them, and its parameter list's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Demangled {
    /// `ns::scale<float>`
    pub name: String,
    /// `ns::scale`
    pub base: String,
    /// The template arguments, if a template instantiation.
    pub template_args: Vec<String>,
    /// The parameter types' text.
    pub params: Vec<String>,
}

/// Splits a demangled function signature (`void scale<float>(float*, float, int)`,
/// `VecAdd(float const*, int)`) into name and parameters.
pub fn split_signature(sig: &str) -> Result<Demangled, String> {
    let sig = sig.trim();
    if !sig.ends_with(')') {
        return Err(format!("`{sig}` is no function signature"));
    }
    // The parameter list: the parenthesis matching the last one.
    let mut depth = 0;
    let mut open = None;
    for (i, c) in sig.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    open = Some(i);
                    break;
                }
            }
            _ => {}
        }
    }
    let open = open.ok_or_else(|| format!("`{sig}`: unbalanced parentheses"))?;
    let head = &sig[..open];
    let list = &sig[open + 1..sig.len() - 1];
    // A template instantiation's return type comes first: the name is after the last space
    // outside `<>`.
    let mut depth = 0;
    let mut name_start = 0;
    for (i, c) in head.char_indices() {
        match c {
            '<' | '(' => depth += 1,
            '>' | ')' => depth -= 1,
            ' ' if depth == 0 => name_start = i + 1,
            _ => {}
        }
    }
    let name = head[name_start..].trim().to_string();
    let (base, template_args) = match name.find('<') {
        Some(lt) if name.ends_with('>') => (
            name[..lt].to_string(),
            split_top_level(&name[lt + 1..name.len() - 1])
                .into_iter()
                .map(|a| a.trim().to_string())
                .collect(),
        ),
        _ => (name.clone(), Vec::new()),
    };
    let params = match list.trim() {
        "" | "void" => Vec::new(),
        l => split_top_level(l)
            .into_iter()
            .map(|p| p.trim().to_string())
            .collect(),
    };
    Ok(Demangled {
        name,
        base,
        template_args,
        params,
    })
}

/// The readable Rust type name of a kernel: `VecAdd` for `VecAdd`, `FillU32` for
/// `fill_u32`, `ScaleF32` for `scale<float>`, `NsSumI32_256` for `ns::sum<int, 256>`.
pub fn rust_type_name(base: &str, template_args: &[String]) -> String {
    let mut out = String::new();
    for part in base.split("::") {
        out.push_str(&camel(part));
    }
    for arg in template_args {
        let word = template_arg_word(arg);
        // A number after a digit stays apart: `Sum8_256`, not `Sum8256`.
        if out.ends_with(|c: char| c.is_ascii_digit())
            && word.starts_with(|c: char| c.is_ascii_digit())
        {
            out.push('_');
        }
        out.push_str(&word);
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'K');
    }
    out
}

/// One template argument as a word of a Rust name: a type's Rust name (`F32`, `Float4`),
/// a number's digits (`Neg1` for -1), or the identifier's words.
fn template_arg_word(arg: &str) -> String {
    let mut a = arg.trim();
    // `(unsigned int)4` -> `4`
    if a.starts_with('(') {
        if let Some(close) = a.find(')') {
            a = a[close + 1..].trim();
        }
    }
    if let Some((rust, _, _)) = known_type(a) {
        let last = rust.rsplit("::").next().unwrap_or(rust);
        return camel(last);
    }
    let (neg, digits) = match a.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, a),
    };
    if digits.starts_with(|c: char| c.is_ascii_digit()) {
        let num: String = digits.chars().take_while(|c| c.is_ascii_digit()).collect();
        return if neg { format!("Neg{num}") } else { num };
    }
    match a {
        "true" => return "True".into(),
        "false" => return "False".into(),
        _ => {}
    }
    a.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty() && *w != "const")
        .map(camel)
        .collect()
}

/// `fill_u32` -> `FillU32`, `VecAdd` -> `VecAdd`, `f16` -> `F16`.
pub fn camel(s: &str) -> String {
    let mut out = String::new();
    for piece in s.split('_').filter(|p| !p.is_empty()) {
        let mut cs = piece.chars();
        if let Some(first) = cs.next() {
            out.extend(first.to_uppercase());
            out.push_str(cs.as_str());
        }
    }
    out
}

/// `VecAdd` -> `vec_add`, `ScaleF32` -> `scale_f32`, `N` -> `n`, `numElems` -> `num_elems`.
pub fn snake(s: &str) -> String {
    let mut out = String::new();
    let mut prev: Option<char> = None;
    for c in s.chars() {
        if c.is_ascii_uppercase() {
            if prev.is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit()) {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
        prev = Some(c);
    }
    out
}

/// Rust's reserved words, which a generated identifier must avoid.
pub fn is_keyword(s: &str) -> bool {
    matches!(
        s,
        "as" | "break"
            | "const"
            | "continue"
            | "crate"
            | "else"
            | "enum"
            | "extern"
            | "false"
            | "fn"
            | "for"
            | "if"
            | "impl"
            | "in"
            | "let"
            | "loop"
            | "match"
            | "mod"
            | "move"
            | "mut"
            | "pub"
            | "ref"
            | "return"
            | "self"
            | "Self"
            | "static"
            | "struct"
            | "super"
            | "trait"
            | "true"
            | "type"
            | "unsafe"
            | "use"
            | "where"
            | "while"
            | "async"
            | "await"
            | "dyn"
            | "abstract"
            | "become"
            | "box"
            | "do"
            | "final"
            | "macro"
            | "override"
            | "priv"
            | "typeof"
            | "unsized"
            | "virtual"
            | "yield"
            | "try"
            | "gen"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rust(t: &str) -> ParamType {
        parse_param(t, false).unwrap().rust
    }

    #[test]
    fn pointers_become_views() {
        for t in [
            "float const*",
            "const float*",
            "const float *",
            "float const * __restrict__",
        ] {
            assert_eq!(
                rust(t),
                ParamType::Pointer {
                    elem: Some("f32"),
                    cpp: "float".into(),
                    mutable: false
                },
                "{t}"
            );
        }
        assert_eq!(
            rust("float*"),
            ParamType::Pointer {
                elem: Some("f32"),
                cpp: "float".into(),
                mutable: true
            }
        );
        assert_eq!(
            rust("__half*"),
            ParamType::Pointer {
                elem: Some("::cuda_driver::half::f16"),
                cpp: "__half".into(),
                mutable: true
            }
        );
        assert_eq!(
            rust("Params const*"),
            ParamType::Pointer {
                elem: None,
                cpp: "Params".into(),
                mutable: false
            }
        );
        assert_eq!(rust("void*"), ParamType::Untyped);
        assert_eq!(rust("void const*"), ParamType::Untyped);
    }

    #[test]
    fn scalars_and_structs() {
        let value = |t| match rust(t) {
            ParamType::Value { rust, size } => (rust, size),
            other => panic!("{t}: {other:?}"),
        };
        assert_eq!(value("int"), ("i32", 4));
        assert_eq!(value("unsigned int"), ("u32", 4));
        assert_eq!(value("long long"), ("i64", 8));
        assert_eq!(value("unsigned long"), ("usize", 8));
        assert_eq!(value("size_t"), ("usize", 8));
        assert_eq!(value("double"), ("f64", 8));
        assert_eq!(value("signed char"), ("i8", 1));
        assert_eq!(value("__nv_bfloat16"), ("::cuda_driver::half::bf16", 2));
        assert_eq!(value("float4"), ("::cuda_driver::vector::Float4", 16));
        assert_eq!(value("int3"), ("::cuda_driver::vector::Int3", 12));
        assert_eq!(
            rust("Params"),
            ParamType::Struct {
                cpp: "Params".into()
            }
        );
        assert_eq!(
            rust("ns::Pair<int, float>"),
            ParamType::Struct {
                cpp: "ns::Pair<int, float>".into()
            }
        );
    }

    #[test]
    fn unsupported_types_say_why() {
        for (t, why) in [
            ("bool", "DeviceRepr"),
            ("float**", "pointer to pointers"),
            ("int&", "references"),
            ("void", "void"),
        ] {
            let e = parse_param(t, false).unwrap_err();
            assert!(e.contains(why), "{t}: {e}");
        }
    }

    #[test]
    fn annotations_carry_names() {
        let p = parse_param("const float* __restrict__ A", true).unwrap();
        assert_eq!(
            (p.ty.as_str(), p.name.as_deref()),
            ("const float* __restrict__", Some("A"))
        );
        let p = parse_param("unsigned n", true).unwrap();
        assert_eq!(p.name.as_deref(), Some("n"));
        let p = parse_param("unsigned int", true).unwrap();
        assert_eq!(p.name, None);
        let p = parse_param("Params p", true).unwrap();
        assert_eq!(
            (p.rust, p.name.as_deref()),
            (
                ParamType::Struct {
                    cpp: "Params".into()
                },
                Some("p")
            )
        );
    }

    #[test]
    fn signatures_split() {
        let d = split_signature("VecAdd(float const*, float const*, float*, int)").unwrap();
        assert_eq!((d.name.as_str(), d.base.as_str()), ("VecAdd", "VecAdd"));
        assert_eq!(d.params.len(), 4);
        let d = split_signature("void scale<float>(float*, float, int)").unwrap();
        assert_eq!(
            (d.name.as_str(), d.base.as_str()),
            ("scale<float>", "scale")
        );
        assert_eq!(d.template_args, ["float"]);
        let d = split_signature("void ns::fill<Pair<int, int>, (unsigned int)4>(int*)").unwrap();
        assert_eq!(d.base, "ns::fill");
        assert_eq!(d.template_args, ["Pair<int, int>", "(unsigned int)4"]);
        assert_eq!(d.params, ["int*"]);
        assert!(split_signature("noop()").unwrap().params.is_empty());
    }

    #[test]
    fn readable_rust_names() {
        assert_eq!(rust_type_name("VecAdd", &[]), "VecAdd");
        assert_eq!(rust_type_name("fill_u32", &[]), "FillU32");
        assert_eq!(rust_type_name("add4", &[]), "Add4");
        assert_eq!(rust_type_name("scale", &["float".into()]), "ScaleF32");
        assert_eq!(rust_type_name("scale", &["__half".into()]), "ScaleF16");
        assert_eq!(rust_type_name("scale", &["float4".into()]), "ScaleFloat4");
        assert_eq!(
            rust_type_name("ns::sum", &["int".into(), "(unsigned int)256".into()]),
            "NsSumI32_256"
        );
        assert_eq!(rust_type_name("k", &["-1".into(), "2".into()]), "KNeg1_2");
        assert_eq!(
            rust_type_name("k", &["Pair<int, int>".into()]),
            "KPairIntInt"
        );
        assert_eq!(snake("VecAdd"), "vec_add");
        assert_eq!(snake("ScaleF32"), "scale_f32");
        assert_eq!(snake("Add4"), "add4");
        assert_eq!(snake("NsSumI32_256"), "ns_sum_i32_256");
    }

    fn scalar() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "int",
            "unsigned int",
            "char",
            "unsigned char",
            "short",
            "long long",
            "unsigned long long",
            "unsigned long",
            "float",
            "double",
            "__half",
            "__nv_bfloat16",
            "float2",
            "float4",
            "int4",
            "double2",
        ])
    }

    proptest! {
        /// Every scalar, as a value, a pointer and a pointer to const, in either const
        /// spelling and with any spacing, maps to its Rust type.
        #[test]
        fn every_spelling_maps(t in scalar(), west in any::<bool>(), sp in 0usize..3) {
            let (r, size, _) = known_type(t).unwrap();
            prop_assert_eq!(rust(t), ParamType::Value { rust: r, size });
            let space = " ".repeat(sp);
            let shared = if west { format!("const {t}{space}*") } else { format!("{t} const{space}*") };
            prop_assert_eq!(rust(&shared), ParamType::Pointer { elem: Some(r), cpp: t.into(), mutable: false });
            let mutable = format!("{t}{space}*");
            prop_assert_eq!(rust(&mutable), ParamType::Pointer { elem: Some(r), cpp: t.into(), mutable: true });
        }

        /// A signature built from random parameters splits back into them.
        #[test]
        fn signatures_round_trip(
            name in "[a-z][a-zA-Z0-9_]{0,8}",
            params in prop::collection::vec(scalar(), 0..8),
            template in prop::option::of(scalar()),
        ) {
            let list = params.join(", ");
            let sig = match template {
                Some(t) => format!("void {name}<{t}>({list})"),
                None => format!("{name}({list})"),
            };
            let d = split_signature(&sig).unwrap();
            prop_assert_eq!(&d.base, &name);
            prop_assert_eq!(d.params.iter().map(String::as_str).collect::<Vec<_>>(), params);
            prop_assert_eq!(d.template_args.len(), template.is_some() as usize);
            let rust_name = rust_type_name(&d.base, &d.template_args);
            prop_assert!(rust_name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
            prop_assert!(rust_name.starts_with(|c: char| c.is_ascii_uppercase()));
        }
    }
}

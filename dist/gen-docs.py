#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The installed documentation, made from one source each so it cannot drift:

  gen-docs.py man NPU VERSION OUTDIR SUBCOMMAND...
      npu.1 and npu-SUBCOMMAND.1 with help2man from the built CLI's --help
      (not npu-serve.1: `npu serve` runs npu-serve, whose page is npu-serve.8)
      (SUBCOMMAND... is what meson expects; `npu --help` must list exactly
      those, or the build fails naming the difference)
  gen-docs.py prog-man PROGRAM VERSION SECTION NAME OUT
      PROGRAM.SECTION with help2man from PROGRAM's --help (npu-serve.8,
      npu-ocr.1), with dist/PROGRAM.h2m when there is one
  gen-docs.py completion NPU OUT
      the bash completion of npu: its subcommands from `npu --help`, each
      one's flags from `npu SUBCOMMAND --help`
  gen-docs.py libman VERSION OUT HEADER...
      libnpu-user.3 from the public headers: each one's opening comment and
      its NPU_API declarations with the comments above them
"""
import os
import re
import subprocess
import sys


def die(msg):
    sys.stderr.write("gen-docs: %s\n" % msg)
    sys.exit(1)


def run_help(argv):
    """The --help text of argv (stdout and stderr: some commands print it on
    stderr), or die naming the command."""
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=60, env=dict(os.environ, LC_ALL="C"))
    except (OSError, subprocess.TimeoutExpired) as e:
        die("%s: %s" % (" ".join(argv), e))
    text = p.stdout.decode("utf-8", "replace")
    if not text.strip():
        die("%s printed nothing (exit %d)" % (" ".join(argv), p.returncode))
    return text


def subcommands(npu):
    """[(name, summary)] from the 'commands:' list of `npu --help`."""
    text = run_help([npu, "--help"])
    out, inlist = [], False
    for line in text.splitlines():
        if line.strip() == "commands:":
            inlist = True
            continue
        if inlist:
            m = re.match(r"^  ([a-z][a-z0-9-]*)\s+(.*)$", line)
            if not m:
                break
            out.append((m.group(1), m.group(2).strip()))
    if not out:
        die("`%s --help` lists no commands" % npu)
    return out


def help2man(argv, out):
    try:
        subprocess.run(["help2man", "--no-info", "--output=" + out] + argv, check=True,
                       timeout=120, env=dict(os.environ, LC_ALL="C"))
    except (OSError, subprocess.SubprocessError) as e:
        die("help2man %s: %s" % (" ".join(argv), e))


def flags_of(text):
    """Every --flag a help text names, in order, once."""
    seen = []
    for f in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", text):
        if f not in seen:
            seen.append(f)
    return seen


def cmd_man(npu, version, outdir, expected):
    cmds = [c for c in subcommands(npu) if c[0] != "help"]
    names = [c[0] for c in cmds]
    if sorted(names) != sorted(expected):
        die("`npu --help` lists %s but dist/meson.build expects %s: update npu_subcommands there"
            % (" ".join(names), " ".join(expected)))
    help2man(["--name=the command-line front end of libnpu-user (" + ", ".join(names) + ")",
              "--version-string=" + version, "--help-option=--help",
              "--include=" + os.path.join(os.path.dirname(__file__), "npu.h2m"), npu],
             os.path.join(outdir, "npu.1"))
    for name, summary in cmds:
        if name == "serve":
            continue	# `npu serve` is npu-serve: its page is npu-serve(8)
        # help2man runs "PROGRAM HELP-OPTION" through the shell.
        help2man(["--name=" + summary, "--version-string=" + version,
                  "--help-option=%s --help" % name, "--no-discard-stderr", npu],
                 os.path.join(outdir, "npu-%s.1" % name))
        # The page is of `npu NAME`: say so in its title line.
        path = os.path.join(outdir, "npu-%s.1" % name)
        with open(path) as f:
            page = f.read()
        page = re.sub(r'^\.TH NPU ', '.TH NPU-%s ' % name.upper(), page, count=1, flags=re.M)
        page = re.sub(r'^npu \\- ', 'npu-%s \\\\- ' % name, page, count=1, flags=re.M)
        with open(path, "w") as f:
            f.write(page)


def cmd_prog_man(prog, version, section, name, out):
    argv = ["--section=" + section, "--name=" + name, "--version-string=" + version,
            "--help-option=--help"]
    inc = os.path.join(os.path.dirname(__file__), os.path.basename(prog) + ".h2m")
    if os.path.exists(inc):
        argv.append("--include=" + inc)
    help2man(argv + [prog], out)


def cmd_completion(npu, out):
    cmds = subcommands(npu)
    lines = [
        "# bash completion for npu, generated from `npu --help` and each",
        "# `npu COMMAND --help` at build time (dist/gen-docs.py): do not edit.",
        "_npu()",
        "{",
        "\tlocal cur=${COMP_WORDS[COMP_CWORD]} flags=",
        "\tif [ \"$COMP_CWORD\" -eq 1 ]; then",
        "\t\tCOMPREPLY=($(compgen -W '%s --help --version' -- \"$cur\"))" % " ".join(c[0] for c in cmds),
        "\t\treturn",
        "\tfi",
        "\tcase ${COMP_WORDS[1]} in",
    ]
    for name, _ in cmds:
        if name == "help":
            continue
        flags = flags_of(run_help([npu, name, "--help"]))
        if "--help" not in flags:
            flags.append("--help")
        lines.append("\t%s) flags='%s' ;;" % (name, " ".join(flags)))
    lines += [
        "\tesac",
        "\tif [[ $cur == -* ]]; then",
        "\t\tCOMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))",
        "\telse",
        "\t\tCOMPREPLY=()\t# -o default: file names",
        "\tfi",
        "}",
        "complete -o default -F _npu npu",
        "",
    ]
    with open(out, "w") as f:
        f.write("\n".join(lines))


def roff(s):
    s = s.replace("\\", "\\e")
    return "\n".join(("\\&" + l) if l.startswith((".", "'")) else l for l in s.split("\n"))


def header_doc(path):
    """(opening comment, [(comment above, declaration)]) of a public header."""
    src = open(path).read()
    m = re.search(r"/\*\n(.*?)\*/", src, re.S)
    intro = ""
    if m:
        intro = "\n".join(re.sub(r"^ ?\* ?", "", l) for l in m.group(1).splitlines()).strip()
    decls = []
    lines = src.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("NPU_API "):
            # The declaration, to its ';', without comments, preprocessor
            # lines and attributes.
            j, parts = i, []
            while True:
                code = re.sub(r"/\*.*?\*/|//.*$", "", lines[j])
                if not code.lstrip().startswith("#"):
                    parts.append(code)
                if code.rstrip().endswith(";") or j + 1 >= len(lines):
                    break
                j += 1
            decl = " ".join(parts)
            decl = re.sub(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)", "", decl)
            # The comment right above (a /* ... */ block or // lines).
            k, comment = i - 1, []
            if k >= 0 and lines[k].rstrip().endswith("*/"):
                while k >= 0:
                    comment.insert(0, lines[k])
                    if lines[k].lstrip().startswith("/*"):
                        break
                    k -= 1
            text = "\n".join(comment)
            text = re.sub(r"^\s*/\*+ ?|\s*\*/\s*$", "", text)
            text = "\n".join(re.sub(r"^\s*\* ?", "", l) for l in text.splitlines()
                             if not re.match(r"^\s*\*?\s*-{8,}\s*$", l)).strip()
            decl = re.sub(r"^NPU_API ", "", decl.strip())
            decl = re.sub(r"\s+", " ", decl).replace(" ;", ";").strip()
            decls.append((text, decl))
            i = j
        i += 1
    return intro, decls


def cmd_libman(version, out, headers):
    pages = [".TH LIBNPU-USER 3 \"\" \"libnpu-user %s\" \"Library Functions Manual\"" % version,
             ".\\\" Generated from the public headers by dist/gen-docs.py: do not edit.",
             ".SH NAME",
             "libnpu-user, libnpu-runtime \\- run ONNX models on the NPU and the CPU",
             ".SH SYNOPSIS",
             ".nf",
             ".B #include <npu/npu.h>",
             ".PP",
             "cc app.c $(pkg-config \\-\\-cflags \\-\\-libs libnpu-user)",
             "cc app.c $(pkg-config \\-\\-cflags \\-\\-libs libnpu-runtime)   # compiled models (.npub) only",
             ".fi",
             ".SH DESCRIPTION",
             "libnpu-user loads ONNX models, optimizes, partitions, quantizes and compiles",
             "them for the NPU and runs what the NPU cannot on CPU kernels.",
             "libnpu-runtime has the same API without the ONNX importer and the compiler:",
             "it runs compiled models (.npub) and names the compiler in the error of",
             "anything that needs it.",
             "Split computing's client is libnpu-remote (",
             ".IR <npu/npu_remote.h> ,",
             "pkg-config npu-remote).",
             "Each header below is listed with its own description and the functions it",
             "exports."]
    total = 0
    for h in headers:
        intro, decls = header_doc(h)
        pages.append(".SH %s" % os.path.basename(h).upper().replace("_", "\\_"))
        if intro:
            pages += [".PP", roff(intro)]
        for text, decl in decls:
            pages += [".TP", ".B " + roff(decl).replace('"', '\\(dq')]
            pages.append(roff(text) if text else "\\&")
            total += 1
    if total < 10:
        die("only %d NPU_API declarations found in %s" % (total, " ".join(headers)))
    pages += [".SH SEE ALSO",
              ".BR npu (1),",
              ".BR npu-serve (8),",
              "/usr/share/doc/libnpu-user-dev/",
              ""]
    with open(out, "w") as f:
        f.write("\n".join(pages))


def main(argv):
    if len(argv) >= 5 and argv[1] == "man":
        cmd_man(argv[2], argv[3], argv[4], argv[5:])
    elif len(argv) == 7 and argv[1] == "prog-man":
        cmd_prog_man(argv[2], argv[3], argv[4], argv[5], argv[6])
    elif len(argv) == 4 and argv[1] == "completion":
        cmd_completion(argv[2], argv[3])
    elif len(argv) >= 5 and argv[1] == "libman":
        cmd_libman(argv[2], argv[3], argv[4:])
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv)

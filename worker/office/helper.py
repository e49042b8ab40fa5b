# docrender office helper: one per slot. It starts the slot's LibreOffice,
# talks to it over LibreOffice's own UNO bridge (a named pipe, so no TCP port
# exists even inside the slot's network namespace) and converts the documents
# the Go engine asks for, one JSON line in, one JSON line out.
#
# argv: soffice-path profile-dir pipe-name max-memory-bytes
# stdin:  {"id":1,"in":"/dir/doc.docx","out":"/dir/doc.pdf","kind":"docx",
#          "landscape":false,"pageRange":"","pdfVersion":0}
# stdout: {"ready":true,"pid":123} once, then
#         {"id":1,"ok":true,"pages":3} or {"id":1,"ok":false,"class":"...","error":"..."}
# class: "password", "unreadable", "unsupported" (the document's fault),
#        "crash" (the bridge to LibreOffice died: the slot must be restarted),
#        "failed" (anything else).
import ctypes
import json
import os
import re
import resource
import signal
import subprocess
import sys
import time

import uno
import unohelper
from com.sun.star.beans import PropertyValue
from com.sun.star.lang import DisposedException
from com.sun.star.task import XInteractionHandler
from com.sun.star.uno import RuntimeException

PR_SET_PDEATHSIG = 1

soffice_path, profile_dir, pipe_name, max_memory = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
out = sys.stdout
# Nothing but our JSON lines may reach stdout: LibreOffice's own chatter and
# Python warnings go to stderr, which the engine logs.
sys.stdout = sys.stderr


def reply(obj):
    out.write(json.dumps(obj) + "\n")
    out.flush()


def die_with_parent():
    # If the helper dies (killed with its process group, or the Go process
    # gone), LibreOffice must not outlive it.
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


def limit_child():
    die_with_parent()
    if max_memory > 0:
        # Address space bound: a document that makes LibreOffice allocate
        # without end (a zip bomb's parts, a giant table) fails its own
        # allocation and LibreOffice dies instead of the machine swapping.
        resource.setrlimit(resource.RLIMIT_AS, (max_memory, max_memory))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def prop(name, value):
    p = PropertyValue()
    p.Name = name
    p.Value = value
    return p


class Handler(unohelper.Base, XInteractionHandler):
    """Answers every question LibreOffice asks while loading with "no":
    passwords, macro confirmations, link updates, repair offers. It notes
    a password question so the client hears why its document failed."""

    def __init__(self):
        self.password = False
        self.asked = []

    def handle(self, request):
        # request.getRequest() cannot be read from Python 3.11's pyuno (it
        # raises "returned a result with an exception set"), so the question
        # is told by the answers offered: a password request offers
        # XInteractionPassword.
        conts = request.getContinuations()
        types = [[t.typeName for t in c.getTypes()] for c in conts]
        if any(n.startswith("com.sun.star.task.XInteractionPassword") for ts in types for n in ts):
            self.password = True
        self.asked.append([n.rsplit(".", 1)[-1] for ts in types for n in ts if "Interaction" in n])
        for want in ("com.sun.star.task.XInteractionAbort", "com.sun.star.task.XInteractionDisapprove"):
            for c, ts in zip(conts, types):
                if want in ts:
                    c.select()
                    return


# Load filters we name ourselves: text and CSV are otherwise guessed with the
# machine's encoding and, for CSV, LibreOffice's import dialog settings.
LOAD_FILTERS = {
    "csv": ("Text - txt - csv (StarCalc)", "44,34,76,1,,0,false,true,false,false,false"),
    "txt": ("Text (encoded)", "UTF8,LF,,,"),
}

# Filters LibreOffice may fall back to for bytes it cannot place: plain
# text. A document that is not text but ends up loaded with them was not
# the office file its name says.
TEXT_FILTERS = ("Text", "Text (encoded)", "Text - txt - csv (StarCalc)")

EXPORT = [
    ("com.sun.star.sheet.SpreadsheetDocument", "calc_pdf_Export"),
    ("com.sun.star.presentation.PresentationDocument", "impress_pdf_Export"),
    ("com.sun.star.drawing.DrawingDocument", "draw_pdf_Export"),
    ("com.sun.star.text.GenericTextDocument", "writer_pdf_Export"),
]


def connect(deadline):
    local = uno.getComponentContext()
    resolver = local.ServiceManager.createInstanceWithContext("com.sun.star.bridge.UnoUrlResolver", local)
    url = "uno:pipe,name=%s;urp;StarOffice.ComponentContext" % pipe_name
    while True:
        try:
            ctx = resolver.resolve(url)
            return ctx.ServiceManager.createInstanceWithContext("com.sun.star.frame.Desktop", ctx)
        except Exception:
            if time.time() > deadline:
                raise
            time.sleep(0.05)


def landscape(doc):
    if doc.supportsService("com.sun.star.presentation.PresentationDocument") or doc.supportsService(
        "com.sun.star.drawing.DrawingDocument"
    ):
        pages = list(doc.DrawPages) + list(doc.MasterPages)
        for p in pages:
            if p.Height > p.Width:
                w, h = p.Width, p.Height
                p.Width, p.Height = h, w
        return
    styles = doc.StyleFamilies.getByName("PageStyles")
    for name in styles.ElementNames:
        s = styles.getByName(name)
        if not s.IsLandscape:
            w, h = s.Width, s.Height
            s.IsLandscape = True
            # IsLandscape alone only flips the flag: the size must follow.
            if h > w:
                s.Width, s.Height = h, w


def no_calc_headers(doc):
    # Calc's default page style prints the sheet's name (our temporary file
    # name) and "Page 1" around a CSV; a CSV has no layout of its own to keep.
    styles = doc.StyleFamilies.getByName("PageStyles")
    for name in styles.ElementNames:
        s = styles.getByName(name)
        s.HeaderIsOn = False
        s.FooterIsOn = False


PAGE_RE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")


def count_pages(path):
    # LibreOffice writes every page object as plain text (no object streams),
    # so counting them is exact for its output.
    with open(path, "rb") as f:
        return len(PAGE_RE.findall(f.read()))


def convert(desktop, req):
    kind = req.get("kind", "")
    handler = Handler()
    load = [
        prop("Hidden", True),
        prop("ReadOnly", True),
        prop("MacroExecutionMode", 0),  # css.document.MacroExecMode.NEVER_EXECUTE
        prop("UpdateDocMode", 0),  # css.document.UpdateDocMode.NO_UPDATE
        prop("InteractionHandler", handler),
        prop("Silent", True),
    ]
    if kind in LOAD_FILTERS:
        name, opts = LOAD_FILTERS[kind]
        load += [prop("FilterName", name), prop("FilterOptions", opts)]
    try:
        doc = desktop.loadComponentFromURL(uno.systemPathToFileUrl(req["in"]), "_blank", 0, tuple(load))
    except (DisposedException, RuntimeException) as e:
        if handler.password:
            return {"ok": False, "class": "password", "error": "password-protected"}
        if is_bridge_dead(e):
            return {"ok": False, "class": "crash", "error": str(e)}
        return {"ok": False, "class": "unreadable", "error": str(e)}
    except Exception as e:
        if handler.password:
            return {"ok": False, "class": "password", "error": "password-protected"}
        return {"ok": False, "class": "unreadable", "error": "%s: %s (asked: %s)" % (type(e).__name__, e, handler.asked)}
    if doc is None:
        if handler.password:
            return {"ok": False, "class": "password", "error": "password-protected"}
        return {"ok": False, "class": "unreadable", "error": "LibreOffice could not read it (asked: %s)" % handler.asked}
    try:
        filt = ""
        for a in doc.getArgs():
            if a.Name == "FilterName":
                filt = a.Value
        if filt in TEXT_FILTERS and kind not in ("txt", "csv"):
            return {"ok": False, "class": "unreadable", "error": "not a %s document" % kind}
        export = ""
        for service, f in EXPORT:
            if doc.supportsService(service):
                export = f
                break
        if not export:
            return {"ok": False, "class": "unsupported", "error": "LibreOffice opened it as a kind of document it cannot print"}
        if kind == "csv":
            no_calc_headers(doc)
        if req.get("landscape"):
            landscape(doc)
        data = []
        if req.get("pageRange"):
            data.append(prop("PageRange", req["pageRange"]))
        if req.get("pdfVersion"):
            data.append(prop("SelectPdfVersion", int(req["pdfVersion"])))
        data.append(prop("ExportFormFields", False))
        filter_data = uno.Any("[]com.sun.star.beans.PropertyValue", tuple(data))
        store = (prop("FilterName", export), prop("Overwrite", True), prop("FilterData", filter_data))
        uno.invoke(doc, "storeToURL", (uno.systemPathToFileUrl(req["out"]), store))
        return {"ok": True, "pages": count_pages(req["out"]), "filter": filt, "export": export}
    except (DisposedException, RuntimeException) as e:
        if is_bridge_dead(e):
            return {"ok": False, "class": "crash", "error": str(e)}
        return {"ok": False, "class": "failed", "error": "%s: %s" % (type(e).__name__, e)}
    except Exception as e:
        return {"ok": False, "class": "failed", "error": "%s: %s" % (type(e).__name__, e)}
    finally:
        try:
            doc.close(True)
        except Exception:
            pass


def is_bridge_dead(e):
    return isinstance(e, DisposedException) or "Binary URP bridge" in str(e) or "disposed" in str(e).lower()


def program():
    # Run soffice.bin itself, not the soffice script and its oosplash
    # launcher: then the process we start is the one that renders, it dies
    # with us (PDEATHSIG is not inherited across oosplash's fork) and a crash
    # is seen at once. The script's environment is copied below.
    real = os.path.realpath(soffice_path)
    binary = os.path.join(os.path.dirname(real), "soffice.bin")
    if os.path.basename(real) in ("soffice", "libreoffice") and os.access(binary, os.X_OK):
        return binary
    return soffice_path


def start(args):
    env = dict(os.environ)
    env["LO_SAVE_LC_ALL"] = env.get("LC_ALL", "")
    env["LC_ALL"] = "C"
    env["SAL_ENABLE_FILE_LOCKING"] = "1"
    return subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=sys.stderr, stderr=sys.stderr, preexec_fn=limit_child, env=env)


def main():
    die_with_parent()
    args = [
        program(),
        "--headless",
        "--invisible",
        "--nocrashreport",
        "--nodefault",
        "--nologo",
        "--nofirststartwizard",
        "--norestore",
        "--nolockcheck",
        "-env:UserInstallation=" + uno.systemPathToFileUrl(profile_dir),
        "--accept=pipe,name=%s;urp;StarOffice.ComponentContext" % pipe_name,
    ]
    deadline = time.time() + 120
    proc = start(args)
    desktop = None
    while desktop is None:
        try:
            desktop = connect(min(deadline, time.time() + 0.5))
        except Exception as e:
            code = proc.poll()
            if code == 81:
                # A fresh profile: soffice.bin sets it up, then asks to be
                # started again (oosplash's job when it is in between).
                proc = start(args)
                continue
            if code is not None or time.time() > deadline:
                reply({"ready": False, "error": "LibreOffice did not answer (exit %s): %s" % (code, e)})
                proc.kill()
                return 1
    # From now on the kernel reaps LibreOffice when it dies: the engine
    # kills it first and then the rest of the group, and a LibreOffice whose
    # parent was already gone would otherwise be left a zombie under a PID 1
    # that may never reap (in a container, often the worker itself).
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    reply({"ready": True, "pid": proc.pid})
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        req = json.loads(line)
        res = convert(desktop, req)
        res["id"] = req.get("id")
        if proc.poll() is not None and res.get("ok") is False:
            res["class"] = "crash"
        reply(res)
        if res.get("class") == "crash":
            break
    # stdin closed (the engine is done with this slot) or LibreOffice died.
    try:
        desktop.terminate()
    except Exception:
        pass
    try:
        proc.wait(timeout=3)
    except subprocess.TimeoutExpired:
        proc.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())

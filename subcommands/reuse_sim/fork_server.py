# gpumem reuse-sim max-batch's fork server. A search runs one Python program
# a dozen times; each fresh interpreter spends most of its start importing
# (torch 4 s, Lightning 15 to 20 s) before its first CUDA call. This process
# imports the script's top-level modules once (the installed ones: the
# program's own may read each run's sys.argv), then forks one process per
# run: each gets its own environment, working directory, output, process
# group and CUDA context (CUDA was never initialized here), so its memory
# is a fresh process's; only the imports are shared.
#
#   python3 fork_server.py DIR SCRIPT
#
# DIR: gpumem's private directory: this process writes DIR/status ("ready",
# or "unfit: why", once) and listens on DIR/socket. A request is one JSON
# line {"argv": [...], "env": ["NAME=VALUE", ...], "cwd": ..., "preload":
# FILE} with one descriptor (SCM_RIGHTS) for the run's stdout and stderr;
# the reply is "pid N" or "error: why". The run is forked twice, so that
# gpumem (a child subreaper) becomes its parent and waits for it as for any
# child. A server whose imports started CUDA or a thread cannot fork safely:
# it says unfit at once (each import is checked) and gpumem starts fresh
# processes. It exits when gpumem is gone. A run ends as multiprocessing's
# forked workers end (_end): exit handlers, then os._exit, without the
# interpreter's teardown.
import ast
import json
import os
import socket
import sys
import threading
import time
import warnings


def _top_level_imports(script):
    """The modules the script imports at its top level (try blocks and if
    blocks included), in order, each once; relative imports left out."""
    with open(script, "rb") as f:
        tree = ast.parse(f.read(), script)
    names = []

    def visit(body):
        for node in body:
            if isinstance(node, ast.Import):
                names.extend(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.append(node.module)
            elif isinstance(node, ast.Try):
                visit(node.body)
            elif isinstance(node, ast.If):
                visit(node.body)
    visit(tree.body)
    return list(dict.fromkeys(names))


def _is_local(module, directory):
    """Whether the module is the program's own (found in or below the
    script's folder or the working directory, or not found at all): its
    top level may read sys.argv (a config module's parse_args), which is
    each run's own, so the run imports it itself."""
    import importlib.util
    try:
        spec = importlib.util.find_spec(module.split(".")[0])
    except (ImportError, ValueError):
        return True
    if spec is None:
        return True
    places = list(spec.submodule_search_locations or []) + ([spec.origin] if spec.origin else [])
    roots = [os.path.realpath(directory), os.path.realpath(os.getcwd())]
    for place in places:
        if place in ("built-in", "frozen"):
            continue
        real = os.path.realpath(place)
        if "site-packages" in real.split(os.sep) or "dist-packages" in real.split(os.sep):
            continue  # installed, if in the project's own virtual environment
        if any(real == root or real.startswith(root + os.sep) for root in roots):
            return True
    return False


def _driver_opened():
    """An open /dev/nvidia* descriptor: the CUDA driver started here."""
    try:
        for fd in os.listdir("/proc/self/fd"):
            try:
                if os.readlink("/proc/self/fd/" + fd).startswith("/dev/nvidia"):
                    return True
            except OSError:
                pass
    except OSError:
        pass
    return False


def _unfit_after(module):
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "cuda", None) is not None:
        try:
            if torch.cuda.is_initialized():
                return "importing %s initialized CUDA" % module
        except Exception:
            pass
    if _driver_opened():
        return "importing %s opened the GPU driver" % module
    if threading.active_count() > 1:
        return "importing %s started a Python thread (%s)" % (module, ", ".join(t.name for t in threading.enumerate()[1:4]))
    return None


def _write_status(directory, text):
    path = os.path.join(directory, "status")
    with open(path + ".tmp", "w") as f:
        f.write(text + "\n")
    os.rename(path + ".tmp", path)


def _prepare(directory, script):
    """Imports what the script imports; None when forking is safe, else why not."""
    sys.argv = [script]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    try:
        modules = _top_level_imports(script)
    except (OSError, SyntaxError, ValueError) as e:
        return "cannot read %s: %s" % (script, e)
    if "torch" not in modules:
        modules.insert(0, "torch")
    import importlib
    for module in modules:
        if module != "torch" and _is_local(module, sys.path[0]):
            continue
        try:
            importlib.import_module(module)
        except BaseException:  # the run imports it itself, and meets its error there
            pass
        why = _unfit_after(module)
        if why:
            return why
    if "torch" not in sys.modules:
        return "torch cannot be imported"
    return None


def _receive(connection):
    data, fds = b"", []
    while not data.endswith(b"\n"):
        message, ancillary, _, _ = connection.recvmsg(65536, socket.CMSG_SPACE(4 * 4))
        if not message:
            break
        data += message
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.extend(int.from_bytes(payload[i:i + 4], sys.byteorder) for i in range(0, len(payload) - len(payload) % 4, 4))
    return json.loads(data.decode()), fds


def _serve(directory, listener):
    """Answers requests until gpumem is gone; returns (in the forked run
    only) the request that run is to carry out."""
    parent = os.getppid()
    listener.settimeout(1.0)
    while True:
        if os.getppid() != parent:
            os._exit(0)
        try:
            connection, _ = listener.accept()
        except socket.timeout:
            continue
        connection.settimeout(30)
        fds = []
        try:
            request, fds = _receive(connection)
            if len(fds) != 1:
                raise ValueError("one descriptor expected, %d came" % len(fds))
            reader, writer = os.pipe()
            with warnings.catch_warnings():  # native threads of the imports: checked for Python's own above
                warnings.simplefilter("ignore", DeprecationWarning)
                middle = os.fork()
            if middle == 0:  # never returns to this loop: it forks the run and ends
                try:
                    run = os.fork()
                except BaseException:
                    os._exit(1)
                if run == 0:
                    try:
                        os.setpgid(0, 0)  # a group of its own, as a fresh run's (made on both sides: it exists before gpumem hears the pid)
                        os.close(reader)
                        os.close(writer)
                        listener.close()
                        connection.close()
                        request["output"] = os.dup(fds[0])  # the finally below closes the one received
                    except BaseException:
                        os._exit(1)
                    return request
                try:
                    os.setpgid(run, run)
                except OSError:
                    pass
                try:
                    os.write(writer, str(run).encode())
                finally:
                    os._exit(0)
            os.close(writer)
            run_pid = int(os.read(reader, 32).decode())
            os.close(reader)
            os.waitpid(middle, 0)  # the run is gpumem's child from now on
            connection.sendall(b"pid %d\n" % run_pid)
        except Exception as e:
            try:
                connection.sendall(("error: %s: %s\n" % (type(e).__name__, e)).encode())
            except OSError:
                pass
        finally:
            for fd in fds:
                os.close(fd)
            connection.close()


def _become_run(request):
    """In the forked run: what a fresh `python SCRIPT ARGS` would have."""
    import signal
    output = request["output"]
    os.dup2(output, 1)
    os.dup2(output, 2)
    os.close(output)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.environ.clear()
    os.environ.update(dict(e.split("=", 1) for e in request["env"] if "=" in e))
    os.chdir(request["cwd"])
    argv = request["argv"]
    sys.argv = argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(argv[1]))
    torch = sys.modules.get("torch")
    threads = os.environ.get("OMP_NUM_THREADS", "")
    set_threads = getattr(torch, "set_num_threads", None)
    if set_threads is not None and threads.isdigit() and int(threads) > 0:
        set_threads(int(threads))  # libgomp read the server's environment when it loaded
    # A fresh process seeds numpy's global random state from the OS when it
    # imports numpy; a fork keeps the server's (Python's random reseeds
    # itself at fork). Reseeded here, so that runs do not all draw alike.
    numpy = sys.modules.get("numpy")
    reseed = getattr(getattr(numpy, "random", None), "seed", None)
    if reseed is not None:
        try:
            reseed()
        except Exception:
            pass
    preload = request.get("preload")
    if preload:
        import importlib.util
        spec = importlib.util.spec_from_file_location("_gpumem_preload", preload)
        module = importlib.util.module_from_spec(spec)
        sys.modules["_gpumem_preload"] = module
        spec.loader.exec_module(module)
    return argv[1]


def _exit_status(code):
    """The exit status the interpreter gives SystemExit(code)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write("%s\n" % (code,))
    except Exception:
        pass
    return 1


def _run_as_main(script):
    """Runs the script as __main__; its exit status, as the interpreter
    would give it (an uncaught exception's traceback printed by
    sys.excepthook, which the recording hook wraps to note its kind)."""
    import runpy
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        return _exit_status(e.code)
    except KeyboardInterrupt:  # the interpreter's own handling: it dies of SIGINT
        raise
    except BaseException:
        kind, value, tb = sys.exc_info()
        # Kept as the interpreter keeps an uncaught exception, frames and
        # tensors alive through the exit handlers: the recording's end is a
        # fresh run's.
        sys.last_type, sys.last_value, sys.last_traceback = kind, value, tb
        if sys.version_info >= (3, 12):
            sys.last_exc = value
        sys.excepthook(kind, value, tb)
        return 1
    return 0


def _end(status):
    """Ends the run as the interpreter ends a process, short of tearing
    its modules down, as multiprocessing's forked workers end: its other
    threads waited for, the exit handlers run (the program's, then the
    recording hook's, which writes the recording), stdout and stderr
    flushed, then os._exit. The teardown left out (every module's objects
    freed one by one, then the CUDA runtime's) took 2 s of a Lightning
    run's 6.4 on an H200, with nothing for gpumem in it
    (bench/forked_run_phases.py)."""
    import atexit
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(status)


def main():
    directory, script = sys.argv[1], sys.argv[2]
    started = time.monotonic()
    why = _prepare(directory, script)
    if why:
        _write_status(directory, "unfit: " + why)
        return
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(os.path.join(directory, "socket"))
    listener.listen(64)
    _write_status(directory, "ready %.3f" % (time.monotonic() - started))
    request = _serve(directory, listener)
    script = _become_run(request)
    _end(_run_as_main(script))


if __name__ == "__main__":  # bench/forked_run_phases.py imports its parts
    main()

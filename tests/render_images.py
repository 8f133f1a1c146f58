"""Loads SVG images in headless Chromium, offline, each as an <img> of one page, and
fails unless every one of them decodes with a size: what a browser (and GitHub's
markdown, which shows SVG through <img>) needs of a picture.
Usage: render_images.py CHROMIUM WORK_DIR IMAGE.svg..."""
import html
import os
import re
import subprocess
import sys


def main(chromium, work, images):
    page = os.path.join(work, "images.html")
    with open(page, "w") as f:
        f.write("<!doctype html><html><body>\n")
        for i, path in enumerate(images):
            src = html.escape("file://" + os.path.abspath(path))
            f.write(f'<img id="i{i}" src="{src}" onload="this.dataset.state=\'ok \' + this.naturalWidth + \'x\' + '
                    f'this.naturalHeight" onerror="this.dataset.state=\'error\'">\n')
        f.write("</body></html>\n")
    # Every host name fails to resolve: an image that needed the network would show it.
    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={work}/profile",
                          "--host-resolver-rules=MAP * ~NOTFOUND", "--allow-file-access-from-files",
                          "--virtual-time-budget=10000", "--dump-dom", "file://" + page],
                         capture_output=True, text=True, timeout=120).stdout
    failures = 0
    for i, path in enumerate(images):
        m = re.search(rf'id="i{i}"[^>]*data-state="([^"]*)"|data-state="([^"]*)"[^>]*id="i{i}"', dom)
        state = (m.group(1) or m.group(2)) if m else "not loaded"
        size = re.fullmatch(r"ok (\d+)x(\d+)", state)
        if not size or int(size.group(1)) == 0 or int(size.group(2)) == 0:
            print(f"FAIL {path}: {state} in Chromium")
            failures += 1
        else:
            print(f"{path}: rendered, {size.group(1)} x {size.group(2)} px")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))

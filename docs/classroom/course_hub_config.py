"""The course's part of a JupyterHub configuration (docs/classroom.md says what each line is for).

Load it from your hub's own configuration (or drop it into The Littlest JupyterHub's
/opt/tljh/config/jupyterhub_config.d/):

    load_subconfig("/etc/jupyterhub/course_hub_config.py")   # in jupyterhub_config.py

It assumes the nbgitpuller link of the README (targetpath=pytorch-gpu-course), so every user
has the student bundle in ~/pytorch-gpu-course: the kernels import course_lib from there
(the student copy: checks, hints, no answer key). tests/hub runs a real hub with this file.
"""

import os

c = get_config()  # noqa: F821 (JupyterHub provides it)

COURSE_FOLDER = "pytorch-gpu-course"
# Where a user's home is: The Littlest JupyterHub /home/jupyter-{username}; Zero to JupyterHub
# /home/jovyan; a plain LocalProcessSpawner /home/{username}. COURSE_HUB_HOME overrides it.
HOME = os.environ.get("COURSE_HUB_HOME", "/home/jupyter-{username}")


def course_path(spawner) -> str:
    """This user's pulled bundle: the folder their kernels import course_lib from."""
    return os.path.join(HOME.format(username=spawner.user.name), COURSE_FOLDER)


c.Spawner.environment.update(
    {  # added to whatever else the hub's configuration sets
        "PYTHONPATH": course_path,
        # Many users on a shared CPU: keep each user's torch from taking every core of the machine.
        "OMP_NUM_THREADS": os.environ.get("COURSE_HUB_THREADS", "2"),
    }
)
c.Spawner.default_url = "/lab"
# Honoured by the spawners that can (SystemdSpawner in TLJH, KubeSpawner); 4 GB is also what the
# grader gives each graded notebook by default.
c.Spawner.mem_limit = os.environ.get("COURSE_HUB_MEMORY", "4G")
